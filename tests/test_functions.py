"""Functions of real numbers (LN, LOG, LOG2, LOG10, EXP, the trigonometric functions, DEGREES,
RADIANS), the digests (MD5, SHA1, SHA2) and ORD, against oracles.

The real functions' oracle is Python's `math`, on the platform's libm as the server's, with
MySQL's formulas (`LOG(b, x)` is `ln(x) / ln(b)`, `COT(x)` is `1 / tan(x)`, ...), so that every
result must agree to the last bit. The digests' oracle is Python's hashlib. Inputs are drawn
from a seeded generator; a failure names the seed and the statement:

    python3 -m pytest tests/test_functions.py -k oracle   (seeds 0..SEEDS-1)
"""

import math
import random

import pymysql
import pytest

SEEDS = 8
CALLS_PER_SEED = 60

# name, arity, MySQL's formula (None: the result is NULL).
ONE_ARG = {
    "LN": lambda x: math.log(x) if x > 0 else None,
    "LOG": lambda x: math.log(x) if x > 0 else None,
    "LOG2": lambda x: math.log(x) / math.log(2) if x > 0 else None,
    "LOG10": lambda x: math.log10(x) if x > 0 else None,
    "EXP": math.exp,
    "SIN": math.sin,
    "COS": math.cos,
    "TAN": math.tan,
    "COT": lambda x: 1 / math.tan(x),
    "ASIN": lambda x: math.asin(x) if -1 <= x <= 1 else None,
    "ACOS": lambda x: math.acos(x) if -1 <= x <= 1 else None,
    "ATAN": math.atan,
    "DEGREES": lambda x: x * (180 / math.pi),
    "RADIANS": lambda x: x * (math.pi / 180),
}
TWO_ARGS = {
    "LOG": lambda b, x: math.log(x) / math.log(b) if b > 0 and b != 1 and x > 0 else None,
    "ATAN": math.atan2,
    "ATAN2": math.atan2,
}


def literal(rng: random.Random) -> float:
    """A number in the ranges these functions meet: small, negative, near 0 and 1, large."""
    kind = rng.randrange(5)
    if kind == 0:
        return float(rng.randint(-10, 10))
    if kind == 1:
        return rng.uniform(-1.0, 1.0)
    if kind == 2:
        return rng.uniform(0.0, 700.0)
    if kind == 3:
        return rng.choice([0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 1e300])
    return rng.uniform(-1e6, 1e6)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_functions_of_real_numbers_agree_with_the_oracle(conn, seed):
    rng = random.Random(seed)
    with conn.cursor() as c:
        for _ in range(CALLS_PER_SEED):
            if rng.random() < 0.3:
                name = rng.choice(sorted(TWO_ARGS))
                args = (literal(rng), literal(rng))
                formula = TWO_ARGS[name]
            else:
                name = rng.choice(sorted(ONE_ARG))
                args = (literal(rng),)
                formula = ONE_ARG[name]
            sql = f"SELECT {name}({', '.join(repr(a) + 'e0' if 'e' not in repr(a) else repr(a) for a in args)})"
            try:
                expected = formula(*args)
            except (OverflowError, ZeroDivisionError):
                expected = "out of range"
            if isinstance(expected, float) and math.isinf(expected):
                expected = "out of range"
            try:
                c.execute(sql)
                got = c.fetchone()[0]
            except pymysql.err.OperationalError as e:
                assert e.args[0] == 1690 and expected == "out of range", f"seed {seed}: {sql}: {e}"
                continue
            assert got == expected, f"seed {seed}: {sql} gave {got!r}, the oracle {expected!r}"


def test_out_of_range_results_are_error_1690_and_the_connection_stays(conn):
    with conn.cursor() as c:
        for sql, message in [("SELECT EXP(1000)", "exp(1000)"), ("SELECT COT(0)", "cot(0)")]:
            with pytest.raises(pymysql.err.OperationalError) as e:
                c.execute(sql)
            assert e.value.args[0] == 1690
            assert f"DOUBLE value is out of range in '{message}'" in e.value.args[1]
        c.execute("SELECT EXP(-1000), ASIN(2), ACOS(-1.5), LOG(0.5, 8), LN(NULL), ATAN2(NULL, 1)")
        assert c.fetchone() == (0.0, None, None, -3.0, None, None)


@pytest.mark.mysql8_only
def test_a_logarithm_of_a_number_at_or_below_zero_is_null_with_warning_3020(conn):
    with conn.cursor() as c:
        for sql in ["SELECT LN(0)", "SELECT LOG(-1)", "SELECT LOG2(0)", "SELECT LOG10(-5)", "SELECT LOG(1, 8)", "SELECT LOG(2, 0)"]:
            c.execute(sql)
            assert c.fetchone() == (None,), sql
            c.execute("SHOW WARNINGS")
            assert c.fetchall() == (("Warning", 3020, "Invalid argument for logarithm"),), sql


def test_functions_of_real_numbers_on_columns_and_in_where(conn):
    with conn.cursor() as c:
        c.execute("CREATE TABLE angles (id INT PRIMARY KEY, deg DOUBLE, n INT)")
        c.execute("INSERT INTO angles VALUES (1, 0, 1), (2, 90, 10), (3, 180, 100), (4, NULL, NULL)")
        c.execute("SELECT id, RADIANS(deg), LOG10(n) FROM angles ORDER BY id")
        assert c.fetchall() == ((1, 0.0, 0.0), (2, 90 * (math.pi / 180), 1.0), (3, 180 * (math.pi / 180), 2.0), (4, None, None))
        c.execute("SELECT id FROM angles WHERE SIN(RADIANS(deg)) > 0.5 ORDER BY id")
        assert c.fetchall() == ((2,),)
        c.execute("SELECT SUM(LN(n)) FROM angles")
        assert c.fetchone()[0] == pytest.approx(math.log(10) + math.log(100))


def random_text(rng: random.Random) -> str:
    """Up to 40 characters from ASCII, Latin-1, three-byte and four-byte UTF-8 ranges."""
    alphabet = "abcXYZ019 '\\_%" + "éøß" + "€中文" + "😀"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(41)))


def sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


@pytest.mark.parametrize("seed", range(SEEDS))
def test_digests_and_ord_agree_with_the_oracle(conn, seed):
    """MD5, SHA1, SHA2 of each length, and ORD against Python's hashlib and MySQL's rule for
    ORD (the leftmost character's UTF-8 bytes as a big-endian number)."""
    import hashlib

    rng = random.Random(seed)
    with conn.cursor() as c:
        for _ in range(CALLS_PER_SEED // 4):
            text = random_text(rng)
            data = text.encode()
            bits = rng.choice([0, 224, 256, 384, 512, 1, 128])
            c.execute(f"SELECT MD5({sql_string(text)}), SHA1({sql_string(text)}), SHA({sql_string(text)}), SHA2({sql_string(text)}, {bits}), ORD({sql_string(text)})")
            sha2 = {0: hashlib.sha256, 224: hashlib.sha224, 256: hashlib.sha256, 384: hashlib.sha384, 512: hashlib.sha512}.get(bits)
            first = text[:1].encode()
            expected = (
                hashlib.md5(data).hexdigest(),
                hashlib.sha1(data).hexdigest(),
                hashlib.sha1(data).hexdigest(),
                sha2(data).hexdigest() if sha2 else None,
                int.from_bytes(first, "big"),
            )
            assert c.fetchone() == expected, f"seed {seed}: text {text!r}, SHA2 bits {bits}"


def test_digests_of_numbers_binary_strings_dates_and_null(conn):
    with conn.cursor() as c:
        c.execute("SELECT MD5(12), SHA1(1.5), MD5(X'00FF'), ORD(X'C3A9'), ORD(5), ORD(''), MD5(DATE '2024-01-02'), MD5(NULL)")
        assert c.fetchone() == (
            "c20ad4d76fe97759aa27a0c99bff6710",
            "aa8f289ebe6d4db1b4a1038b8931ec8c2b5399fb",
            "d07d34efac6328007ad67c7e0a985e00",
            195,
            53,
            0,
            "ae354a0c189267ef9fa0638a19f3b7d4",
            None,
        )


def week_oracle(d, mode: int) -> tuple[int, int]:
    """(week, the week's year) of date `d` under WEEK's `mode`, from the manual's table:
    weeks start on Monday in modes 1, 3, 5, 7 (else Sunday); week 1 is the first week with
    four days or more in the year in modes 1, 3, 4, 6 (else the first week that starts in
    it); modes 2, 3, 6, 7 count 1-53, a date before week 1 being in the last week of the
    year before (and, under the four-day rule, a date past the year's last week in week 1
    of the next); the others count 0-53, week 0 being the days before week 1."""
    import datetime

    first_day = 0 if mode in (1, 3, 5, 7) else 6  # Python's weekday(): Monday 0, Sunday 6
    four_days = mode in (1, 3, 4, 6)
    one_to_53 = mode in (2, 3, 6, 7)

    def week1_start(year: int):
        jan1 = datetime.date(year, 1, 1)
        offset = (jan1.weekday() - first_day) % 7
        start = jan1 - datetime.timedelta(days=offset)
        starts_in_year = offset == 0
        if four_days:
            return start if 7 - offset >= 4 else start + datetime.timedelta(days=7)
        return start if starts_in_year else start + datetime.timedelta(days=7)

    start = week1_start(d.year)
    if d < start:
        if not one_to_53:
            return 0, d.year
        return (d - week1_start(d.year - 1)).days // 7 + 1, d.year - 1
    if one_to_53 and four_days and d >= week1_start(d.year + 1):
        return 1, d.year + 1
    return (d - start).days // 7 + 1, d.year


@pytest.mark.parametrize("seed", range(SEEDS))
def test_weeks_weekdays_and_quarters_agree_with_the_oracle(conn, seed):
    """WEEK in its eight modes (EXTRACT(WEEK) is WEEK's default mode) and YEARWEEK against the
    manual's definitions; WEEKDAY, DAYOFYEAR, QUARTER and EXTRACT(QUARTER) against Python's
    calendar; mode 3 is ISO 8601."""
    import datetime

    rng = random.Random(seed)
    with conn.cursor() as c:
        for _ in range(CALLS_PER_SEED // 4):
            # Around a new year half the time, where the modes disagree.
            if rng.random() < 0.5:
                d = datetime.date(rng.randint(1900, 2100), 12, 25) + datetime.timedelta(days=rng.randrange(14))
            else:
                d = datetime.date(1, 1, 1) + datetime.timedelta(days=rng.randrange(3_652_059))
            s = f"'{d.isoformat()}'"
            modes = ", ".join(f"WEEK({s}, {m}), YEARWEEK({s}, {m})" for m in range(8))
            c.execute(f"SELECT WEEKDAY({s}), DAYOFYEAR({s}), QUARTER({s}), EXTRACT(QUARTER FROM {s}), WEEK({s}), EXTRACT(WEEK FROM {s}), "
                      f"YEARWEEK({s}), {modes}")
            expected = [d.weekday(), d.timetuple().tm_yday, (d.month - 1) // 3 + 1, (d.month - 1) // 3 + 1]
            expected += [week_oracle(d, 0)[0], week_oracle(d, 0)[0], week_oracle(d, 2)[1] * 100 + week_oracle(d, 2)[0]]
            for m in range(8):
                week, year = week_oracle(d, m | 2)
                expected += [week_oracle(d, m)[0], year * 100 + week]
            assert c.fetchone() == tuple(expected), f"seed {seed}: {d}"
            iso = d.isocalendar()
            assert week_oracle(d, 3) == (iso[1], iso[0]), f"the oracle's mode 3 is ISO 8601: {d}"


def test_time_to_sec_and_makedate(conn):
    import datetime
    import decimal

    with conn.cursor() as c:
        c.execute("SELECT TIME_TO_SEC('22:23:00'), TIME_TO_SEC('-01:00:00'), TIME_TO_SEC('00:00:01.5'), TIME_TO_SEC(TIME '838:59:59'), "
                  "TIME_TO_SEC('2024-01-01 10:00:00'), TIME_TO_SEC(NULL)")
        assert c.fetchone() == (80580, -3600, decimal.Decimal("1.5"), 3020399, 36000, None)
        c.execute("SELECT MAKEDATE(2011, 31), MAKEDATE(2011, 0), MAKEDATE(11, 1), MAKEDATE(70, 1), MAKEDATE(2011, 400), "
                  "MAKEDATE(2024, 366), MAKEDATE(9999, 366), MAKEDATE(NULL, 1)")
        assert c.fetchone() == (datetime.date(2011, 1, 31), None, datetime.date(2011, 1, 1), datetime.date(1970, 1, 1),
                                datetime.date(2012, 2, 4), datetime.date(2024, 12, 31), None, None)
