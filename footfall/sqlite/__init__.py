"""Django's SQLite backend that creates the database file's folder on first connect.

Settings must create nothing when imported (an installed package may not write where it
lives), so the local default database's folder is made here, when it is first needed.
"""
