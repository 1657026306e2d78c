-- The history database's schema version 1, frozen: a copy of the first migration in
-- store/schema.cc. The migration test builds a version-1 database from it, as an older colltestd
-- left it, and opens it with the current RunStore. Never edit this file.
CREATE TABLE machines (
  key TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  identity BLOB NOT NULL
);
CREATE TABLE runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT UNIQUE NOT NULL,
  state INTEGER NOT NULL,
  label TEXT NOT NULL,
  owner TEXT NOT NULL,
  backend TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  message TEXT NOT NULL,
  request_json TEXT NOT NULL,
  spec BLOB NOT NULL,
  machine_key TEXT NOT NULL,
  cases INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE cases (
  run_seq INTEGER NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  variant INTEGER NOT NULL,
  mode INTEGER NOT NULL,
  world INTEGER NOT NULL,
  m INTEGER NOT NULL,
  n INTEGER NOT NULL,
  dtype INTEGER NOT NULL,
  status INTEGER NOT NULL,
  median_us REAL NOT NULL,
  result BLOB NOT NULL,
  PRIMARY KEY (run_seq, idx)
);
PRAGMA user_version = 1;
