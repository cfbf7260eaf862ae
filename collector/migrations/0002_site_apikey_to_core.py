# Site and ApiKey now belong to the core app (footfall_core 0001): they leave this app's
# state only; their tables and rows are untouched here (footfall_core 0002 renames them).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('footfall_collector', '0001_initial'),
        ('footfall_core', '0001_initial'),
        # The dashboard's foreign keys point at footfall_core.Site before the old model goes.
        ('footfall_dashboard', '0002_site_in_core'),
    ]

    operations = [
      migrations.SeparateDatabaseAndState(state_operations=[
        migrations.DeleteModel(name='ApiKey'),
        migrations.DeleteModel(name='Site'),
      ]),
    ]
