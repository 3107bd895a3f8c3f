// Node's mysql2 as a real client of Quill, used the way a small shop application uses it: a
// pool of connections, an orders schema, query() with placeholders (values escaped into the
// statement text by the driver) and execute() (server-side prepared statements, binary
// protocol), a committed and a rolled-back transaction, insertId / affectedRows /
// changedRows, values of many types read back through both protocols, several statements in
// one query, and a duplicate-key error after which the connection goes on.
//
// Usage: QUILL_PORT=3306 node main.js (host 127.0.0.1, user root, empty password). Prints
// one line per check, then `node-client: N passed, M failed`; exits non-zero on a failure.
'use strict';

process.env.TZ = 'UTC';

const assert = require('node:assert/strict');
const mysql = require('mysql2/promise');

const port = Number(process.env.QUILL_PORT || 3306);
const base = { host: '127.0.0.1', port, user: 'root', password: '', charset: 'utf8mb4' };

let passed = 0;
let failed = 0;

// One named check: `body` runs its assertions; a thrown error is this check's failure.
async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok ${name}`);
  } catch (err) {
    failed += 1;
    const detail = err && err.stack ? err.stack : String(err);
    console.log(`FAILED ${name}\n  ${detail.split('\n').join('\n  ')}`);
  }
}

// The error a promise rejects with (fails if it resolves).
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected an error, the statement succeeded');
}

function assertDupEntry(err) {
  assert.equal(err.code, 'ER_DUP_ENTRY', `code: ${err.code} (${err.message})`);
  assert.equal(err.errno, 1062);
  assert.equal(err.sqlState, '23000');
  assert.match(err.sqlMessage, /^Duplicate entry '.*' for key '/);
}

const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const names = ["Zoë Ångström", '東京 太郎', 'Łukasz 🍣 Żółć', "O'Brien \\ \"quoted\""];
const bigRef = '9007199254740993'; // 2^53 + 1: not a safe JS number
const bigNeg = '-9223372036854775808';

async function main() {
  const db = `node_client_${process.pid}`;
  const admin = await mysql.createConnection(base);
  await admin.query(`DROP DATABASE IF EXISTS ${db}`);
  await admin.query(`CREATE DATABASE ${db} DEFAULT CHARACTER SET utf8mb4`);

  const pool = mysql.createPool({
    ...base,
    database: db,
    connectionLimit: 4,
    supportBigNumbers: true,
    multipleStatements: true,
    timezone: 'Z',
  });

  try {
    await run(pool, db);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${db}`);
    await admin.end();
  }
}

async function run(pool, db) {
  await check('schema created with several statements in one query', async () => {
    const [results] = await pool.query(`
      CREATE TABLE customers (
        id INT AUTO_INCREMENT PRIMARY KEY,
        email VARCHAR(255) NOT NULL UNIQUE,
        name VARCHAR(100) NOT NULL,
        created_at DATETIME(6) NOT NULL
      ) DEFAULT CHARSET=utf8mb4;
      CREATE TABLE products (
        id INT AUTO_INCREMENT PRIMARY KEY,
        sku VARCHAR(32) NOT NULL,
        title VARCHAR(200) NOT NULL,
        price DECIMAL(10,2) NOT NULL,
        stock INT NOT NULL,
        thumbnail BLOB NULL,
        UNIQUE KEY sku (sku)
      ) DEFAULT CHARSET=utf8mb4;
      CREATE TABLE orders (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        customer_id INT NOT NULL,
        placed_at DATETIME(6) NOT NULL,
        ship_date DATE NULL,
        total DECIMAL(12,2) NOT NULL,
        note VARCHAR(500) NULL,
        external_ref BIGINT NULL,
        KEY by_customer (customer_id)
      ) DEFAULT CHARSET=utf8mb4;
      CREATE TABLE order_items (
        order_id BIGINT NOT NULL,
        product_id INT NOT NULL,
        qty INT NOT NULL,
        unit_price DECIMAL(10,2) NOT NULL,
        PRIMARY KEY (order_id, product_id)
      ) DEFAULT CHARSET=utf8mb4`);
    assert.equal(results.length, 4);
    for (const r of results) {
      assert.equal(r.constructor.name, 'ResultSetHeader');
      assert.equal(r.affectedRows, 0);
    }
    const [tables] = await pool.query('SHOW TABLES');
    assert.deepEqual(tables.map((t) => Object.values(t)[0]).sort(), ['customers', 'order_items', 'orders', 'products']);
  });

  const customerIds = [];
  await check('INSERT ... SET ? (client-side escaping): insertId and affectedRows', async () => {
    for (const [i, name] of names.entries()) {
      const [res] = await pool.query('INSERT INTO customers SET ?', {
        email: `c${i}@example.com`,
        name,
        created_at: new Date(Date.UTC(2024, 0, 15 + i, 9, 30, 0, 250)),
      });
      assert.equal(res.affectedRows, 1);
      assert.equal(res.insertId, i + 1);
      customerIds.push(res.insertId);
    }
    const [[row]] = await pool.query('SELECT LAST_INSERT_ID() AS id, COUNT(*) AS n FROM customers');
    assert.equal(Number(row.id), names.length);
    assert.equal(row.n, names.length);
  });

  await check('non-ASCII and quote/backslash text round-trips through query() and execute()', async () => {
    for (const [i, name] of names.entries()) {
      const [q] = await pool.query('SELECT name, CHAR_LENGTH(name) AS chars, LENGTH(name) AS len, HEX(name) AS hex FROM customers WHERE email = ?', [`c${i}@example.com`]);
      assert.equal(q.length, 1);
      assert.equal(q[0].name, name);
      assert.equal(Number(q[0].chars), [...name].length);
      assert.equal(Number(q[0].len), Buffer.byteLength(name));
      assert.equal(q[0].hex, Buffer.from(name).toString('hex').toUpperCase());
      const [e] = await pool.execute('SELECT id FROM customers WHERE name = ?', [name]);
      assert.deepEqual(e, [{ id: customerIds[i] }]);
    }
    const [like] = await pool.query('SELECT email FROM customers WHERE name LIKE ? ORDER BY id', ['%京 太%']);
    assert.deepEqual(like.map((r) => r.email), ['c1@example.com']);
  });

  const catalogue = [
    ['SKU-1', 'Teapot', '19.99', 10, everyByte],
    ['SKU-2', 'Cup « fine china »', '4.50', 100, Buffer.alloc(0)],
    ['SKU-3', 'Tray', '35.00', 3, null],
  ];
  await check('multi-row INSERT ... VALUES ? : insertId is the first row, affectedRows all', async () => {
    const [res] = await pool.query('INSERT INTO products (sku, title, price, stock, thumbnail) VALUES ?', [catalogue]);
    assert.equal(res.affectedRows, 3);
    assert.equal(res.insertId, 1);
    assert.match(res.info, /Records: 3\s+Duplicates: 0\s+Warnings: 0/);
  });

  await check('BLOB bytes round-trip as Buffer (text and binary protocol)', async () => {
    for (const fetch of ['query', 'execute']) {
      const [rows] = await pool[fetch]('SELECT sku, thumbnail, HEX(thumbnail) AS hex FROM products ORDER BY id');
      assert.equal(rows.length, 3);
      for (const [i, [, , , , bytes]] of catalogue.entries()) {
        if (bytes === null) {
          assert.equal(rows[i].thumbnail, null);
          assert.equal(rows[i].hex, null);
        } else {
          assert.ok(Buffer.isBuffer(rows[i].thumbnail), `${fetch}: ${typeof rows[i].thumbnail}`);
          assert.ok(rows[i].thumbnail.equals(bytes), `${fetch}: bytes of ${rows[i].sku} differ`);
          assert.equal(rows[i].hex, bytes.toString('hex').toUpperCase());
        }
      }
    }
    // A Buffer parameter of execute() is sent as bytes and stored unchanged.
    const reversed = Buffer.from(everyByte).reverse();
    await pool.execute('UPDATE products SET thumbnail = ? WHERE sku = ?', [reversed, 'SKU-3']);
    const [[row]] = await pool.execute('SELECT thumbnail, LENGTH(thumbnail) AS n FROM products WHERE sku = ?', ['SKU-3']);
    assert.ok(row.thumbnail.equals(reversed));
    assert.equal(row.n, 256);
    await pool.execute('UPDATE products SET thumbnail = NULL WHERE sku = ?', ['SKU-3']);
  });

  // The order: 2 teapots and 3 cups for customer 1, committed; stock goes down.
  const placedAt = new Date(Date.UTC(2024, 1, 29, 13, 45, 7, 123));
  let orderId;
  await check('transaction with execute(): committed order is visible to other connections', async () => {
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const lines = [[1, 2], [2, 3]];
      let total = 0;
      for (const [productId, qty] of lines) {
        const [[p]] = await conn.execute('SELECT price, stock FROM products WHERE id = ? FOR UPDATE', [productId]);
        assert.equal(typeof p.price, 'string'); // DECIMAL comes back exact, as a string
        assert.ok(p.stock >= qty);
        total += Math.round(Number(p.price) * 100) * qty;
      }
      const [ins] = await conn.execute(
        'INSERT INTO orders (customer_id, placed_at, ship_date, total, note, external_ref) VALUES (?, ?, ?, ?, ?, ?)',
        [customerIds[0], placedAt, '2024-03-04', (total / 100).toFixed(2), null, bigRef],
      );
      assert.equal(ins.affectedRows, 1);
      assert.ok(ins.insertId >= 1);
      orderId = ins.insertId;
      for (const [productId, qty] of lines) {
        await conn.execute(
          'INSERT INTO order_items (order_id, product_id, qty, unit_price) SELECT ?, id, ?, price FROM products WHERE id = ?',
          [orderId, qty, productId],
        );
        const [upd] = await conn.execute('UPDATE products SET stock = stock - ? WHERE id = ? AND stock >= ?', [qty, productId, qty]);
        assert.equal(upd.affectedRows, 1);
      }
      // Not yet visible elsewhere (REPEATABLE READ / READ COMMITTED alike).
      const [[seen]] = await pool.query('SELECT COUNT(*) AS n FROM orders');
      assert.equal(seen.n, 0);
      await conn.commit();
    } finally {
      conn.release();
    }
    const [[o]] = await pool.query(
      'SELECT o.total, SUM(i.qty * i.unit_price) AS sum, COUNT(*) AS line_count FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = ? GROUP BY o.id, o.total',
      [orderId],
    );
    assert.equal(o.total, '53.48');
    assert.equal(Number(o.sum), 53.48);
    assert.equal(o.line_count, 2);
    const [stock] = await pool.query('SELECT stock FROM products WHERE id IN (?) ORDER BY id', [[1, 2]]);
    assert.deepEqual(stock.map((r) => r.stock), [8, 97]);
  });

  await check('transaction rolled back leaves no trace', async () => {
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const [ins] = await conn.query('INSERT INTO orders (customer_id, placed_at, total) VALUES (?, NOW(6), ?)', [customerIds[1], '35.00']);
      assert.equal(ins.affectedRows, 1);
      const [upd] = await conn.query('UPDATE products SET stock = stock - 3 WHERE sku = ?', ['SKU-3']);
      assert.equal(upd.affectedRows, 1);
      const [[inside]] = await conn.query('SELECT COUNT(*) AS n FROM orders');
      assert.equal(inside.n, 2);
      await conn.rollback();
      const [[after]] = await conn.query('SELECT COUNT(*) AS n FROM orders');
      assert.equal(after.n, 1);
    } finally {
      conn.release();
    }
    const [[p]] = await pool.execute('SELECT stock FROM products WHERE sku = ?', ['SKU-3']);
    assert.equal(p.stock, 3);
  });

  await check('types read back through query() (text protocol)', async () => {
    const [[o]] = await pool.query('SELECT * FROM orders WHERE id = ?', [orderId]);
    checkOrderRow(o);
  });

  await check('types read back through execute() (binary protocol)', async () => {
    const [[o]] = await pool.execute('SELECT * FROM orders WHERE id = ?', [orderId]);
    checkOrderRow(o);
  });

  await check('DATETIME(6) and DATE exactly, with dateStrings, through both protocols', async () => {
    const conn = await mysql.createConnection({ ...base, database: db, dateStrings: true });
    try {
      await conn.query('UPDATE orders SET placed_at = ? WHERE id = ?', ['2024-02-29 13:45:07.123456', orderId]);
      for (const fetch of ['query', 'execute']) {
        const [[o]] = await conn[fetch]('SELECT placed_at, ship_date, DATE_FORMAT(placed_at, "%f") AS micros FROM orders WHERE id = ?', [orderId]);
        assert.equal(o.placed_at, '2024-02-29 13:45:07.123456', fetch);
        assert.equal(o.ship_date, '2024-03-04', fetch);
        assert.equal(o.micros, '123456', fetch);
      }
      const [[c]] = await conn.execute('SELECT created_at FROM customers WHERE id = ?', [customerIds[0]]);
      assert.equal(c.created_at, '2024-01-15 09:30:00.250000');
    } finally {
      await conn.end();
    }
  });

  await check('BIGINT with supportBigNumbers: safe values as numbers, others as exact strings', async () => {
    await pool.query('UPDATE orders SET external_ref = ? WHERE id = ?', [BigInt(bigNeg), orderId]);
    for (const fetch of ['query', 'execute']) {
      const [[o]] = await pool[fetch]('SELECT external_ref, external_ref + 0 = ? AS same, id FROM orders WHERE id = ?', [bigNeg, orderId]);
      assert.equal(o.external_ref, bigNeg, fetch);
      assert.equal(o.id, orderId, fetch);
      assert.equal(typeof o.id, 'number', fetch);
    }
    await pool.execute('UPDATE orders SET external_ref = ? WHERE id = ?', [BigInt(bigRef), orderId]);
    const [[o]] = await pool.execute('SELECT external_ref FROM orders WHERE external_ref = ?', [bigRef]);
    assert.equal(o.external_ref, bigRef);
    const [[m]] = await pool.query('SELECT CAST(? AS UNSIGNED) AS u, -? AS neg', ['18446744073709551615', 5]);
    assert.equal(String(m.u), '18446744073709551615');
    assert.equal(Number(m.neg), -5);
  });

  await check('UPDATE: affectedRows counts matched rows (FOUND_ROWS), changedRows the changed ones', async () => {
    const [res] = await pool.query('UPDATE products SET price = ? WHERE sku IN (?)', ['4.50', ['SKU-1', 'SKU-2']]);
    assert.equal(res.affectedRows, 2);
    assert.equal(res.changedRows, 1);
    assert.match(res.info, /Rows matched: 2\s+Changed: 1\s+Warnings: 0/);
    const [none] = await pool.execute('UPDATE products SET stock = 0 WHERE sku = ?', ['no-such-sku']);
    assert.equal(none.affectedRows, 0);
    await pool.query('UPDATE products SET price = ? WHERE sku = ?', ['19.99', 'SKU-1']);
  });

  await check('INSERT ... ON DUPLICATE KEY UPDATE affectedRows: 1 inserted, 2 updated', async () => {
    const sql = 'INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE stock = stock + VALUES(stock)';
    const [a] = await pool.execute(sql, ['SKU-4', 'Kettle', '49.00', 5]);
    assert.equal(a.affectedRows, 1);
    assert.equal(a.insertId, 4);
    const [b] = await pool.execute(sql, ['SKU-4', 'Kettle', '49.00', 2]);
    assert.equal(b.affectedRows, 2);
    const [[k]] = await pool.execute('SELECT stock FROM products WHERE sku = ?', ['SKU-4']);
    assert.equal(k.stock, 7);
  });

  await check('several statements in one query give several result sets', async () => {
    const [results, fields] = await pool.query(
      'SELECT COUNT(*) AS n FROM orders; UPDATE products SET stock = stock + 1 WHERE sku = ?; SELECT sku, price FROM products WHERE stock > ? ORDER BY id; SELECT ? AS greeting',
      ['SKU-3', 5, 'héllo'],
    );
    assert.equal(results.length, 4);
    assert.deepEqual(results[0], [{ n: 1 }]);
    assert.equal(results[1].constructor.name, 'ResultSetHeader');
    assert.equal(results[1].affectedRows, 1);
    assert.deepEqual(results[2], [
      { sku: 'SKU-1', price: '19.99' },
      { sku: 'SKU-2', price: '4.50' },
      { sku: 'SKU-4', price: '49.00' },
    ]);
    assert.deepEqual(results[3], [{ greeting: 'héllo' }]);
    assert.deepEqual(fields[2].map((f) => f.name), ['sku', 'price']);
    assert.equal(fields[0][0].name, 'n');
    const [[p]] = await pool.query('SELECT stock FROM products WHERE sku = ?', ['SKU-3']);
    assert.equal(p.stock, 4);
  });

  await check('duplicate key through query(): ER_DUP_ENTRY 1062 23000, and the connection goes on', async () => {
    const conn = await pool.getConnection();
    try {
      const err = await rejection(conn.query('INSERT INTO customers (email, name, created_at) VALUES (?, ?, NOW())', ['c0@example.com', 'Again']));
      assertDupEntry(err);
      const [[r]] = await conn.query('SELECT COUNT(*) AS n FROM customers WHERE email = ?', ['c0@example.com']);
      assert.equal(r.n, 1);
    } finally {
      conn.release();
    }
  });

  await check('duplicate key through execute() inside a transaction: only the statement is undone', async () => {
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const [ok] = await conn.execute('INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?)', ['SKU-5', 'Spoon', '2.00', 50]);
      assert.ok(ok.insertId > 4, `insertId ${ok.insertId}`);
      const err = await rejection(conn.execute('INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?)', ['SKU-1', 'Clash', '1.00', 1]));
      assertDupEntry(err);
      const [[n]] = await conn.execute('SELECT id FROM products WHERE sku = ?', ['SKU-5']);
      assert.equal(n.id, ok.insertId);
      await conn.commit();
    } finally {
      conn.release();
    }
    const [rows] = await pool.query('SELECT sku FROM products ORDER BY id');
    assert.deepEqual(rows.map((r) => r.sku), ['SKU-1', 'SKU-2', 'SKU-3', 'SKU-4', 'SKU-5']);
  });

  await check('other errors carry their codes: 1064 42000, 1146 42S02', async () => {
    const syntax = await rejection(pool.query('SELEC 1'));
    assert.equal(syntax.code, 'ER_PARSE_ERROR');
    assert.equal(syntax.errno, 1064);
    assert.equal(syntax.sqlState, '42000');
    const missing = await rejection(pool.execute('SELECT * FROM no_such_table WHERE id = ?', [1]));
    assert.equal(missing.code, 'ER_NO_SUCH_TABLE');
    assert.equal(missing.errno, 1146);
    assert.equal(missing.sqlState, '42S02');
    const [[one]] = await pool.query('SELECT 1 AS one');
    assert.equal(one.one, 1);
  });

  await check('explicit prepare(): statement reused with different parameters, then closed', async () => {
    const conn = await pool.getConnection();
    try {
      const stmt = await conn.prepare('SELECT sku, price * ? AS cost FROM products WHERE sku BETWEEN ? AND ? ORDER BY sku');
      assert.equal(stmt.statement.parameters.length, 3);
      assert.deepEqual(stmt.statement.columns.map((c) => c.name), ['sku', 'cost']);
      const [a] = await stmt.execute([2, 'SKU-1', 'SKU-2']);
      assert.deepEqual(a.map((r) => [r.sku, Number(r.cost)]), [['SKU-1', 39.98], ['SKU-2', 9]]);
      const [b] = await stmt.execute([3, 'SKU-4', 'SKU-5']);
      assert.deepEqual(b.map((r) => [r.sku, Number(r.cost)]), [['SKU-4', 147], ['SKU-5', 6]]);
      await stmt.close();
    } finally {
      conn.release();
    }
  });

  await check('pool serves concurrent requests on distinct connections', async () => {
    const held = await Promise.all([pool.getConnection(), pool.getConnection(), pool.getConnection()]);
    try {
      const ids = await Promise.all(held.map(async (c) => (await c.query('SELECT CONNECTION_ID() AS id'))[0][0].id));
      assert.equal(new Set(ids).size, 3);
    } finally {
      held.forEach((c) => c.release());
    }
    const work = Array.from({ length: 12 }, (_, i) => pool.execute('SELECT ? + 1 AS n, SLEEP(0.01) AS s', [i]));
    const got = (await Promise.all(work)).map(([[r]]) => Number(r.n));
    assert.deepEqual(got, Array.from({ length: 12 }, (_, i) => i + 1));
  });

  await check('DO 1 (a keep-alive some pools send) answers OK without a result set', async () => {
    const conn = await mysql.createConnection({ ...base, database: db });
    try {
      const [res, fields] = await conn.query({ sql: 'DO 1', timeout: 5000 });
      assert.equal(res.constructor.name, 'ResultSetHeader');
      assert.equal(res.affectedRows, 0);
      assert.equal(fields, undefined);
      const [[r]] = await conn.query({ sql: 'SELECT 5 AS five', timeout: 5000 });
      assert.equal(r.five, 5);
    } finally {
      conn.destroy();
    }
  });

  await check('NULL parameters and NULL results', async () => {
    const [ins] = await pool.execute('INSERT INTO orders (customer_id, placed_at, total, note, ship_date, external_ref) VALUES (?, ?, ?, ?, ?, ?)', [customerIds[2], placedAt, '0.00', null, null, null]);
    for (const fetch of ['query', 'execute']) {
      const [[o]] = await pool[fetch]('SELECT note, ship_date, external_ref, note IS NULL AS isnull FROM orders WHERE id = ?', [ins.insertId]);
      assert.deepEqual({ ...o, isnull: Number(o.isnull) }, { note: null, ship_date: null, external_ref: null, isnull: 1 }, fetch);
    }
    const [[c]] = await pool.query('SELECT COUNT(*) AS n FROM orders WHERE note <=> ?', [null]);
    assert.equal(c.n, 2);
  });
}

function checkOrderRow(o) {
  assert.equal(o.id, 1);
  assert.equal(o.customer_id, 1);
  assert.ok(o.placed_at instanceof Date, `placed_at is ${typeof o.placed_at}`);
  assert.equal(o.placed_at.toISOString(), '2024-02-29T13:45:07.123Z');
  assert.ok(o.ship_date instanceof Date);
  assert.equal(o.ship_date.toISOString(), '2024-03-04T00:00:00.000Z');
  assert.equal(o.total, '53.48');
  assert.equal(o.note, null);
  assert.equal(o.external_ref, bigRef);
}

main()
  .catch((err) => {
    failed += 1;
    console.log(`FAILED the program stopped: ${err && err.stack ? err.stack : err}`);
  })
  .finally(() => {
    console.log(`node-client: ${passed} passed, ${failed} failed`);
    process.exitCode = failed === 0 ? 0 : 1;
  });
