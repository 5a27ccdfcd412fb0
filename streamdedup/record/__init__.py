"""Input records: reading files and turning raw records into validated `Page`s."""
