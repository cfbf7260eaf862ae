# Site and ApiKey move here from footfall_collector (issue 27). Only Django's picture of the
# models moves: the tables stay as they are until 0002 renames them, and the content types
# (so permissions and admin history) follow the models.

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import footfall.models
from footfall.legacy_labels import relabel


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('footfall_collector', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
      migrations.SeparateDatabaseAndState(state_operations=[
        migrations.CreateModel(
            name='Site',
            fields=[
                ('site_id', models.CharField(max_length=64, primary_key=True, serialize=False, validators=[django.core.validators.RegexValidator('^[a-z0-9][a-z0-9_\\-]{0,63}$', "lower-case letters, digits, '-' and '_'")])),
                ('name', models.CharField(max_length=200)),
                ('domains', models.JSONField(default=list, help_text="The site's host names; referrers from them count as internal.", validators=[footfall.models.validate_host_list])),
                ('allowed_origins', models.JSONField(blank=True, default=list, help_text='Origins allowed to send beacons; empty means https:// and http:// of each domain.', validators=[footfall.models.validate_origin_list])),
                ('timezone', models.CharField(default='UTC', max_length=64, validators=[footfall.models.validate_timezone])),
                ('salt_policy', models.CharField(choices=[('daily', 'daily'), ('daily_site_tz', 'daily_site_tz')], default='daily', help_text="daily: visitor ids rotate at midnight UTC; daily_site_tz: at midnight in the site's time zone.", max_length=20)),
                ('respect_dnt', models.BooleanField(default=True, help_text='Drop events from browsers sending DNT or Sec-GPC.')),
                ('drop_bots', models.BooleanField(default=False, help_text='Drop crawler traffic instead of recording it flagged.')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'ordering': ['site_id'],
                'db_table': 'footfall_collector_site',
            },
        ),
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('prefix', models.CharField(max_length=16, unique=True)),
                ('key_hash', models.CharField(max_length=64)),
                ('scopes', models.JSONField(default=list)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('site', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='footfall_core.site')),
            ],
            options={
                'db_table': 'footfall_collector_apikey',
            },
        ),
      ]),
        migrations.RunPython(*relabel(['Site', 'ApiKey'], 'footfall_collector', 'footfall_core')),
    ]
