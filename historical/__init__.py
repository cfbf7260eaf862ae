"""The batch layer's serving side: exact daily/hourly rollups in MongoDB."""
