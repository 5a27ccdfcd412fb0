"""The signature state store: RocksDB (rocksdict) with one key layout for every index."""
