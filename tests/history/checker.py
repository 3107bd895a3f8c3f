"""A randomized history checker for the list-append workload.

Clients run short transactions of reads and appends over a few keys (high contention),
each append adding a unique element to a key's comma-separated list, and record the
history: every transaction's operations, what each read returned, and whether it
committed. The checker then verifies what the transaction's isolation level promises:

- at every level: the final list of each key holds exactly the committed appends, each
  once (no dirty write lost or kept a rolled-back append), and each transaction's own
  appends appear in its order;
- at READ COMMITTED and above: a read returns a prefix of the key's final list that ends
  at a transaction boundary, and every element it holds was committed (no aborted or
  intermediate reads), except the reader's own appends;
- at REPEATABLE READ and SERIALIZABLE: two reads of a key with no own append between
  them return the same list (no non-repeatable read);
- at SERIALIZABLE: the graph of write-write, write-read and read-write (anti-)
  dependencies between committed transactions has no cycle.

    python3 tests/history/checker.py --port 3306 [--clients 8 --transactions 100]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from dataclasses import dataclass, field

import pymysql

KEYS = 4
OPS_MAX = 4
# Lock waits in the workload end this fast (innodb_lock_wait_timeout of each client).
CLIENT_LOCK_WAIT_TIMEOUT_S = 5

LEVELS = ("READ UNCOMMITTED", "READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE")


@dataclass
class Txn:
    id: int
    # ("r", key, list read) or ("a", key, element)
    ops: list = field(default_factory=list)
    committed: bool = False
    # The error that aborted it (1205 lock wait timeout, 1213 deadlock).
    error: int | None = None


def parse(v: str | None) -> list[int]:
    return [int(x) for x in (v or "").split(",") if x]


def client(host: str, port: int, db: str, level: str, client_no: int, transactions: int, seed: int, out: list) -> None:
    rng = random.Random(seed * 1000 + client_no)
    c = pymysql.connect(host=host, port=port, user="root", password="", database=db, autocommit=True)
    with c.cursor() as cur:
        cur.execute(f"set session innodb_lock_wait_timeout = {CLIENT_LOCK_WAIT_TIMEOUT_S}")
        cur.execute(f"set session transaction isolation level {level}")
        for t in range(transactions):
            txn = Txn(id=client_no * 100_000 + t)
            try:
                cur.execute("begin")
                for op in range(rng.randint(1, OPS_MAX)):
                    key = rng.randrange(KEYS)
                    if rng.random() < 0.5:
                        cur.execute("select v from lists where k = %s", (key,))
                        txn.ops.append(("r", key, parse(cur.fetchone()[0])))
                    else:
                        element = txn.id * 10 + op
                        # Recorded before it runs: a failed append may still have been applied.
                        txn.ops.append(("a", key, element))
                        cur.execute("update lists set v = concat(v, ',', %s) where k = %s", (str(element), key))
                cur.execute("commit")
                txn.committed = True
            except pymysql.err.MySQLError as e:
                if e.args[0] not in (1205, 1213):
                    raise
                txn.error = e.args[0]
                cur.execute("rollback")
            out.append(txn)
    c.close()


def run(host: str, port: int, level: str, clients: int, transactions: int, seed: int) -> tuple[list[Txn], dict[int, list[int]]]:
    db = f"history_{seed}_{level.replace(' ', '_').lower()}"
    admin = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True)
    with admin.cursor() as cur:
        cur.execute(f"drop database if exists {db}")
        cur.execute(f"create database {db}")
        cur.execute(f"create table {db}.lists (k int primary key, v text not null)")
        cur.execute(f"insert into {db}.lists values " + ", ".join(f"({k}, '')" for k in range(KEYS)))
    history: list[Txn] = []
    threads = [threading.Thread(target=client, args=(host, port, db, level, n, transactions, seed, history)) for n in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with admin.cursor() as cur:
        cur.execute(f"select k, v from {db}.lists")
        final = {k: parse(v) for k, v in cur.fetchall()}
        cur.execute(f"drop database {db}")
    admin.close()
    return history, final


def check(history: list[Txn], final: dict[int, list[int]], level: str) -> list[str]:
    """Every violation of what `level` promises, as text."""
    errors: list[str] = []
    writer: dict[int, Txn] = {}
    for t in history:
        for op in t.ops:
            if op[0] == "a":
                writer[op[2]] = t
    committed_appends = {op[2] for t in history if t.committed for op in t.ops if op[0] == "a"}

    # Final state: exactly the committed appends, once each, each transaction's in order.
    for k, elements in final.items():
        if len(elements) != len(set(elements)):
            errors.append(f"key {k}: an element appears twice in {elements}")
        for e in elements:
            if e not in committed_appends:
                errors.append(f"key {k}: element {e} of an aborted transaction is in the final list")
    in_final = {e for elements in final.values() for e in elements}
    for e in committed_appends - in_final:
        errors.append(f"element {e} of committed transaction {writer[e].id} is missing from the final lists")
    position = {e: (k, i) for k, elements in final.items() for i, e in enumerate(elements)}
    for t in history:
        if t.committed:
            mine = [position[op[2]] for op in t.ops if op[0] == "a" and op[2] in position]
            for k in {p[0] for p in mine}:
                idx = [i for kk, i in mine if kk == k]
                if idx != sorted(idx):
                    errors.append(f"transaction {t.id}: its appends to key {k} are out of order")

    if level != "READ UNCOMMITTED":
        for t in history:
            own: set[int] = set()
            for op in t.ops:
                if op[0] == "a":
                    own.add(op[2])
                    continue
                _, k, seen = op
                others = [e for e in seen if e not in own]
                if others != final[k][: len(others)]:
                    errors.append(f"transaction {t.id}: read {seen} of key {k}, not a committed prefix of {final[k]}")
                    continue
                for e in others:
                    if e not in committed_appends:
                        errors.append(f"transaction {t.id}: read element {e} of an aborted transaction (G1a)")
                if others:
                    w = writer[others[-1]]
                    w_elements = [op2[2] for op2 in w.ops if op2[0] == "a" and op2[1] == k]
                    if w is not t and not set(w_elements) <= set(others):
                        errors.append(f"transaction {t.id}: read an intermediate state of key {k} from transaction {w.id} (G1b)")

    if level in ("REPEATABLE READ", "SERIALIZABLE"):
        for t in history:
            last: dict[int, list[int]] = {}
            for op in t.ops:
                if op[0] == "a":
                    last.pop(op[1], None)
                elif op[1] in last and last[op[1]] != op[2]:
                    errors.append(f"transaction {t.id}: read key {op[1]} twice and got {last[op[1]]} then {op[2]}")
                else:
                    last[op[1]] = op[2]

    if level == "SERIALIZABLE":
        errors.extend(cycles(history, final))
    return errors


def cycles(history: list[Txn], final: dict[int, list[int]]) -> list[str]:
    """Dependency cycles among committed transactions (G0, G1c, G2)."""
    committed = {t.id: t for t in history if t.committed}
    writer = {op[2]: t.id for t in committed.values() for op in t.ops if op[0] == "a"}
    edges: dict[int, set[int]] = {t: set() for t in committed}
    for k, elements in final.items():
        order = [writer[e] for e in elements if e in writer]
        for a, b in zip(order, order[1:]):
            if a != b:
                edges[a].add(b)  # ww
        for t in committed.values():
            for op in t.ops:
                if op[0] != "r" or op[1] != k:
                    continue
                seen = [e for e in op[2] if writer.get(e) != t.id]
                if seen:
                    w = writer.get(seen[-1])
                    if w is not None and w != t.id:
                        edges[w].add(t.id)  # wr
                if len(seen) < len(elements):
                    nxt = writer.get(elements[len(seen)])
                    if nxt is not None and nxt != t.id:
                        edges[t.id].add(nxt)  # rw: the next version overwrote what t read
    # Iterative depth-first search for a cycle.
    state: dict[int, int] = {}
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(edges[start]))]
        state[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return [f"dependency cycle among committed transactions: {path[path.index(nxt):] + [nxt]}"]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(edges[nxt])))
                path.append(nxt)
    return []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--transactions", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    failed = False
    for level in LEVELS:
        history, final = run(args.host, args.port, level, args.clients, args.transactions, args.seed)
        errors = check(history, final, level)
        committed = sum(t.committed for t in history)
        timeouts = sum(t.error == 1205 for t in history)
        deadlocks = sum(t.error == 1213 for t in history)
        print(f"{level}: {len(history)} transactions, {committed} committed, {deadlocks} deadlocks, {timeouts} lock wait timeouts, {len(errors)} violations")
        for e in errors[:20]:
            print("  " + e)
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
