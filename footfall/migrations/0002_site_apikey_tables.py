# The tables of Site and ApiKey take the core app's names once no app's state points at the
# old models (footfall_collector 0002, footfall_dashboard 0002). A rename keeps every row, and
# the foreign keys of API keys, share links and grants follow the renamed table.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('footfall_core', '0001_initial'),
        ('footfall_collector', '0002_site_apikey_to_core'),
        ('footfall_dashboard', '0002_site_in_core'),
    ]

    operations = [
        migrations.AlterModelTable(name='site', table=None),
        migrations.AlterModelTable(name='apikey', table=None),
    ]
