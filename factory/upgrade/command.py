"""`factory store convert RUN_DIR` and `factory store check RUN_DIR`."""

from __future__ import annotations

import argparse
import sqlite3

from ..errors import FactoryError


def add_store_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    store = subparsers.add_parser("store", help="convert a run folder of an older factory, or check a store")
    actions = store.add_subparsers(dest="action", required=True, metavar="ACTION", help="convert or check")
    convert = actions.add_parser("convert", help="an older run folder's DuckDB store into factory.sqlite")
    convert.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    convert.set_defaults(func=cmd_convert)
    check = actions.add_parser("check", help="read every page of a store (PRAGMA quick_check)")
    check.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    check.set_defaults(func=cmd_check)
    return store


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert_run_folder

    counts = convert_run_folder(args.run_dir)
    rows = ", ".join(f"{table} {n}" for table, n in counts.items() if n)
    print(f"converted {args.run_dir}: {rows or 'no rows'}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..store.check import quick_check
    from ..store.db import Store
    from ..store.errors import damaged

    with Store.open(args.run_dir, read_only=True) as store:
        try:
            quick_check(store.db)
        except sqlite3.Error as exc:
            raise damaged(store.path, exc) from None
        if store.lookup("SELECT count(*) FROM sqlite_master")[0][0] == 0:
            raise FactoryError(f"{store.path} holds no tables")
    print(f"{store.path}: ok")
    return 0
