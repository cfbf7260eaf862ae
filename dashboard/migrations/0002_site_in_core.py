# Site moved to the core app (footfall_core 0001): the foreign keys of share links and grants
# point at it in Django's state only; the columns and their data are untouched.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('footfall_dashboard', '0001_initial'),
        ('footfall_core', '0001_initial'),
    ]

    operations = [
      migrations.SeparateDatabaseAndState(state_operations=[
        migrations.AlterField(
            model_name='sharelink',
            name='site',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='footfall_core.site'),
        ),
        migrations.AlterField(
            model_name='siteaccess',
            name='site',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='dashboard_access', to='footfall_core.site'),
        ),
      ]),
    ]
