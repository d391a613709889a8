"""The memories directory on disk, without the database: which files count and how they are read (files),
the record each one is (records), the newest by date folder (recent), and safe reading by a client's path
(reading)."""
