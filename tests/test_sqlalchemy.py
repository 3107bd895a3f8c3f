"""SQLAlchemy Core over the PyMySQL dialect: what an ORM-style application does.

On connect the dialect reads server variables (`SELECT @@version`, `@@sql_mode`,
`@@lower_case_table_names`, `DATABASE()`, ...); `create_all` checks for tables through
`information_schema` / `SHOW` before creating them; reflection parses `SHOW CREATE TABLE`.
"""

import datetime
from decimal import Decimal

import pytest
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    create_engine,
    delete,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError


@pytest.fixture
def engine(server, fresh_db):
    url = f"mysql+pymysql://{server.user}:{server.password}@{server.host}:{server.port}/{fresh_db}?charset=utf8mb4"
    engine = create_engine(url, pool_pre_ping=True)
    yield engine
    engine.dispose()


def define_tables():
    metadata = MetaData()
    author = Table(
        "author",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("name", String(50), nullable=False, unique=True),
        Column("active", Boolean, nullable=False, default=True),
    )
    book = Table(
        "book",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("author_id", Integer, ForeignKey("author.id"), nullable=False, index=True),
        Column("title", String(100), nullable=False),
        Column("price", Numeric(10, 2)),
        Column("published", DateTime),
    )
    return metadata, author, book


def test_create_insert_select_update_delete_drop(engine):
    metadata, author, book = define_tables()
    metadata.create_all(engine)
    metadata.create_all(engine)  # idempotent: both tables are found and left alone

    assert sorted(inspect(engine).get_table_names()) == ["author", "book"]
    columns = inspect(engine).get_columns("book")
    assert [c["name"] for c in columns] == ["id", "author_id", "title", "price", "published"]
    assert [c["nullable"] for c in columns] == [False, False, False, True, True]

    with engine.begin() as conn:
        result = conn.execute(insert(author), [{"name": "Le Guin"}, {"name": "Lem"}, {"name": "Borges", "active": False}])
        assert result.rowcount == 3
        le_guin = conn.execute(select(author.c.id).where(author.c.name == "le guin")).scalar_one()
        result = conn.execute(
            insert(book).values(author_id=le_guin, title="The Dispossessed", price=Decimal("9.99"),
                                published=datetime.datetime(1974, 5, 1, 12, 0)),
        )
        assert result.inserted_primary_key == (1,)
        conn.execute(
            insert(book),
            [
                {"author_id": le_guin, "title": "A Wizard of Earthsea", "price": Decimal("7.50")},
                {"author_id": le_guin + 1, "title": "Solaris", "price": None},
            ],
        )

    with engine.connect() as conn:
        rows = conn.execute(
            select(author.c.name, book.c.title, book.c.price)
            .join(book, book.c.author_id == author.c.id)
            .where(author.c.active.is_(True))
            .order_by(book.c.title)
        ).all()
        assert [tuple(r) for r in rows] == [
            ("Le Guin", "A Wizard of Earthsea", Decimal("7.50")),
            ("Lem", "Solaris", None),
            ("Le Guin", "The Dispossessed", Decimal("9.99")),
        ]
        published = conn.execute(select(book.c.published).where(book.c.id == 1)).scalar_one()
        assert published == datetime.datetime(1974, 5, 1, 12, 0)
        counts = conn.execute(
            select(author.c.name, func.count(book.c.id).label("n"))
            .select_from(author.outerjoin(book))
            .group_by(author.c.name)
            .order_by(author.c.name)
        ).all()
        assert [tuple(r) for r in counts] == [("Borges", 0), ("Le Guin", 2), ("Lem", 1)]

    with engine.begin() as conn:
        result = conn.execute(update(book).where(book.c.price.is_(None)).values(price=Decimal("5")))
        assert result.rowcount == 1
        result = conn.execute(delete(book).where(book.c.price < 8))
        assert result.rowcount == 2
        assert conn.execute(select(func.count()).select_from(book)).scalar_one() == 1

    metadata.drop_all(engine)
    assert inspect(engine).get_table_names() == []


def test_transaction_rolls_back_on_exception(engine):
    metadata, author, _ = define_tables()
    author.create(engine)
    with pytest.raises(RuntimeError):
        with engine.begin() as conn:
            conn.execute(insert(author).values(name="Ghost"))
            raise RuntimeError("abort")
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(author)).scalar_one() == 0


def test_reflection_finds_foreign_keys_and_the_database_enforces_them(engine):
    """Reflection reads keys back as `create_all` declared them; before issue 15 Quill
    accepted the FOREIGN KEY and dropped it, so reflection found none and orphans went in."""
    metadata, author, book = define_tables()
    metadata.create_all(engine)
    reflected = MetaData()
    reflected.reflect(bind=engine)
    keys = inspect(engine).get_foreign_keys("book")
    assert [(k["constrained_columns"], k["referred_table"], k["referred_columns"]) for k in keys] == [(["author_id"], "author", ["id"])]
    assert [fk.target_fullname for fk in reflected.tables["book"].foreign_keys] == ["author.id"]
    with pytest.raises(IntegrityError) as e, engine.begin() as c:
        c.execute(insert(book).values(author_id=12345, title="orphan"))
    assert e.value.orig.args[0] == 1452
    metadata.drop_all(engine)
