"""On-disk translation cache: one SQLite file keyed by (backend, source lang, target lang, source text).

Each sentence is translated once across runs.  Writes are SQLite transactions (WAL journal), so a process killed
mid-write leaves the file consistent: the interrupted batch is simply missing and is translated again next time.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path


class TranslationCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS translations (backend TEXT, src TEXT, tgt TEXT, text TEXT, "
                        "translation TEXT, PRIMARY KEY (backend, src, tgt, text))")
        self.db.commit()

    def get_many(self, backend: str, src: str, tgt: str, texts: list[str]) -> dict[str, str]:
        """Cached translations of those ``texts`` that have one."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), 500):  # stay under SQLite's bound-parameter limit
            chunk = unique[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(f"SELECT text, translation FROM translations WHERE backend=? AND src=? AND "
                                   f"tgt=? AND text IN ({marks})", [backend, src, tgt, *chunk])
            found.update(rows.fetchall())
        return found

    def put_many(self, backend: str, src: str, tgt: str, pairs: list[tuple[str, str]]) -> None:
        """Store (text, translation) pairs in one transaction (all or nothing)."""
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO translations VALUES (?, ?, ?, ?, ?)",
                                [(backend, src, tgt, t, tr) for t, tr in pairs])

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM translations").fetchone()[0]

    def close(self) -> None:
        self.db.close()
