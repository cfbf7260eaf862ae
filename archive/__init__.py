"""The raw event archive, the master dataset: its format (:mod:`archive.schema`), the files
(:mod:`archive.store`), the archiver that fills it from Kafka (:mod:`archive.archiver`) and
the reader the Spark jobs use (:mod:`archive.reader`)."""
