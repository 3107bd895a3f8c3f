<?php
// PHP's PDO (pdo_mysql) and mysqli, both on mysqlnd, as real clients of Quill, used the way a
// small shop application uses them: an orders schema, prepared statements (PDO with emulated
// prepares, where the driver quotes values into the statement text, and with native ones,
// server-side prepared statements and the binary protocol; mysqli's bind_param /
// get_result / bind_result), a committed and a rolled-back transaction, insert ids and
// affected rows, values of many types read back, several statements in one call, and a
// duplicate-key error (1062, SQLSTATE 23000) after which the connection goes on.
//
// Usage: QUILL_PORT=3306 php main.php (host 127.0.0.1, user root, empty password). Prints one
// line per check, then `php-client: N passed, M failed`; exits non-zero on a failure.

declare(strict_types=1);

error_reporting(E_ALL);
set_error_handler(function (int $no, string $msg, string $file, int $line): bool {
    throw new ErrorException($msg, 0, $no, $file, $line);
});

$port = (int) (getenv('QUILL_PORT') ?: 3306);
$host = '127.0.0.1';
$passed = 0;
$failed = 0;

final class CheckFailed extends Exception {}

/** Run after a failed check, to end a transaction the check left open. */
$afterFailure = null;

function check(string $name, callable $body): void
{
    global $passed, $failed, $afterFailure;
    try {
        $body();
        $passed++;
        echo "ok $name\n";
    } catch (Throwable $e) {
        $failed++;
        $lines = [$e->getLine()];
        foreach ($e->getTrace() as $frame) {
            if (($frame['file'] ?? '') === __FILE__) {
                $lines[] = $frame['line'];
            }
        }
        echo "FAILED $name\n  " . get_class($e) . ': ' . $e->getMessage() . "\n  at " . basename(__FILE__) . ' lines ' . implode(' <- ', $lines) . "\n";
        if ($afterFailure !== null) {
            try {
                $afterFailure();
            } catch (Throwable $ignored) {
            }
        }
    }
}

function eq($got, $want, string $what = ''): void
{
    if ($got !== $want) {
        throw new CheckFailed(($what !== '' ? "$what: " : '') . 'got ' . var_export($got, true) . ', want ' . var_export($want, true));
    }
}

function truthy($cond, string $what): void
{
    if (!$cond) {
        throw new CheckFailed($what);
    }
}

/** The exception `$body` throws (a failure if it throws none). */
function thrown(callable $body): Throwable
{
    try {
        $body();
    } catch (Throwable $e) {
        return $e;
    }
    throw new CheckFailed('expected an error, the statement succeeded');
}

const SCHEMA = [
    'CREATE TABLE customers (
        id INT AUTO_INCREMENT PRIMARY KEY,
        email VARCHAR(255) NOT NULL UNIQUE,
        name VARCHAR(100) NOT NULL,
        created_at DATETIME(6) NOT NULL
    ) DEFAULT CHARSET=utf8mb4',
    'CREATE TABLE products (
        id INT AUTO_INCREMENT PRIMARY KEY,
        sku VARCHAR(32) NOT NULL,
        title VARCHAR(200) NOT NULL,
        price DECIMAL(10,2) NOT NULL,
        stock INT NOT NULL,
        thumbnail BLOB NULL,
        UNIQUE KEY sku (sku)
    ) DEFAULT CHARSET=utf8mb4',
    'CREATE TABLE orders (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        customer_id INT NOT NULL,
        placed_at DATETIME(6) NOT NULL,
        ship_date DATE NULL,
        total DECIMAL(12,2) NOT NULL,
        note VARCHAR(500) NULL,
        external_ref BIGINT NULL,
        KEY by_customer (customer_id)
    ) DEFAULT CHARSET=utf8mb4',
    'CREATE TABLE order_items (
        order_id BIGINT NOT NULL,
        product_id INT NOT NULL,
        qty INT NOT NULL,
        unit_price DECIMAL(10,2) NOT NULL,
        PRIMARY KEY (order_id, product_id)
    ) DEFAULT CHARSET=utf8mb4',
];

const NAMES = ["Zoë Ångström", '東京 太郎', 'Łukasz 🍣 Żółć', "O'Brien \\ \"quoted\" \x00 nul"];
const PLACED_AT = '2024-02-29 13:45:07.123456';
const BIG_REF = 9007199254740993; // 2^53 + 1: exact in a PHP int, not in a double
const CATALOGUE = [
    // sku, title, price, stock
    ['SKU-1', 'Teapot', '19.99', 10],
    ['SKU-2', 'Cup « fine china »', '4.50', 100],
    ['SKU-3', 'Tray', '35.00', 3],
];

function everyByte(): string
{
    return implode('', array_map('chr', range(0, 255)));
}

function adminDatabase(string $name, bool $create): void
{
    global $host, $port;
    $pdo = new PDO("mysql:host=$host;port=$port;charset=utf8mb4", 'root', '', [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $pdo->exec("DROP DATABASE IF EXISTS `$name`");
    if ($create) {
        $pdo->exec("CREATE DATABASE `$name` DEFAULT CHARACTER SET utf8mb4");
    }
}

// ---------------------------------------------------------------------------------------
// PDO

function pdoConnect(string $db, bool $emulate, array $more = []): PDO
{
    global $host, $port;
    return new PDO("mysql:host=$host;port=$port;dbname=$db;charset=utf8mb4", 'root', '', $more + [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_DEFAULT_FETCH_MODE => PDO::FETCH_ASSOC,
        PDO::ATTR_EMULATE_PREPARES => $emulate,
    ]);
}

function pdoFlow(bool $emulate): void
{
    $mode = $emulate ? 'PDO emulated prepares' : 'PDO native prepares';
    $db = ($emulate ? 'php_pdo_emul_' : 'php_pdo_native_') . getmypid();
    adminDatabase($db, true);
    try {
        pdoChecks($mode, $db, $emulate);
    } finally {
        adminDatabase($db, false);
    }
}

function pdoChecks(string $mode, string $db, bool $emulate): void
{
    global $afterFailure;
    $pdo = pdoConnect($db, $emulate);
    $afterFailure = function () use ($pdo) {
        if ($pdo->inTransaction()) {
            $pdo->rollBack();
        }
    };

    check("$mode: connected, schema created", function () use ($pdo, $emulate) {
        eq((bool) $pdo->getAttribute(PDO::ATTR_EMULATE_PREPARES), $emulate, 'ATTR_EMULATE_PREPARES');
        foreach (SCHEMA as $ddl) {
            eq($pdo->exec($ddl), 0, 'exec(CREATE TABLE)');
        }
        $tables = $pdo->query('SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()')->fetchAll(PDO::FETCH_COLUMN);
        sort($tables);
        eq($tables, ['customers', 'order_items', 'orders', 'products']);
        eq($pdo->query('SELECT @@character_set_client, @@character_set_results')->fetch(PDO::FETCH_NUM), ['utf8mb4', 'utf8mb4']);
    });

    // With native prepares, PDO::query() sends these as server-side prepared statements too.
    check("$mode: SHOW TABLES and DESCRIBE through query()", function () use ($pdo) {
        $tables = $pdo->query('SHOW TABLES')->fetchAll(PDO::FETCH_COLUMN);
        sort($tables);
        eq($tables, ['customers', 'order_items', 'orders', 'products']);
        $columns = $pdo->query('DESCRIBE orders')->fetchAll(PDO::FETCH_COLUMN);
        eq($columns, ['id', 'customer_id', 'placed_at', 'ship_date', 'total', 'note', 'external_ref']);
    });

    check("$mode: INSERT with named parameters, lastInsertId and rowCount", function () use ($pdo) {
        $ins = $pdo->prepare('INSERT INTO customers (email, name, created_at) VALUES (:email, :name, :created)');
        foreach (NAMES as $i => $name) {
            $ins->execute([':email' => "c$i@example.com", ':name' => $name, ':created' => sprintf('2024-01-%02d 09:30:00.25', 15 + $i)]);
            eq($ins->rowCount(), 1, 'rowCount');
            eq($pdo->lastInsertId(), (string) ($i + 1), 'lastInsertId');
        }
        eq((int) $pdo->query('SELECT COUNT(*) FROM customers')->fetchColumn(), count(NAMES));
    });

    check("$mode: non-ASCII text, quotes, backslash and NUL round-trip", function () use ($pdo) {
        $sel = $pdo->prepare('SELECT id, name, CHAR_LENGTH(name) AS chars, HEX(name) AS hex FROM customers WHERE name = ?');
        foreach (NAMES as $i => $name) {
            $sel->execute([$name]);
            $rows = $sel->fetchAll();
            eq(count($rows), 1, "rows for name $i");
            eq($rows[0]['name'], $name);
            eq((int) $rows[0]['chars'], preg_match_all('/./su', $name));
            eq($rows[0]['hex'], strtoupper(bin2hex($name)));
        }
        // PDO::quote() escapes into the statement text, whatever the prepare mode.
        $quoted = $pdo->quote(NAMES[3]);
        eq($pdo->query("SELECT email FROM customers WHERE name = $quoted")->fetchColumn(), 'c3@example.com');
        $like = $pdo->prepare('SELECT email FROM customers WHERE name LIKE ? ORDER BY id');
        $like->execute(['%京 太%']);
        eq($like->fetchAll(PDO::FETCH_COLUMN), ['c1@example.com']);
    });

    check("$mode: BLOB bytes through PARAM_LOB, and NULL", function () use ($pdo) {
        $ins = $pdo->prepare('INSERT INTO products (sku, title, price, stock, thumbnail) VALUES (?, ?, ?, ?, ?)');
        $blobs = [everyByte(), '', null];
        foreach (CATALOGUE as $i => [$sku, $title, $price, $stock]) {
            $ins->bindValue(1, $sku);
            $ins->bindValue(2, $title);
            $ins->bindValue(3, $price);
            $ins->bindValue(4, $stock, PDO::PARAM_INT);
            $ins->bindValue(5, $blobs[$i], $blobs[$i] === null ? PDO::PARAM_NULL : PDO::PARAM_LOB);
            $ins->execute();
            eq($pdo->lastInsertId(), (string) ($i + 1));
        }
        $rows = $pdo->query('SELECT sku, thumbnail, HEX(thumbnail) AS hex, LENGTH(thumbnail) AS len FROM products ORDER BY id')->fetchAll();
        foreach ($blobs as $i => $bytes) {
            eq($rows[$i]['thumbnail'], $bytes, "bytes of row $i");
            eq($rows[$i]['hex'], $bytes === null ? null : strtoupper(bin2hex($bytes)), "HEX of row $i");
            eq($rows[$i]['len'] === null ? null : (int) $rows[$i]['len'], $bytes === null ? null : strlen($bytes));
        }
        // Read through a prepared statement too (binary protocol when not emulated).
        $sel = $pdo->prepare('SELECT thumbnail FROM products WHERE sku = ?');
        $sel->execute(['SKU-1']);
        eq($sel->fetchColumn(), everyByte());
    });

    $orderId = null;
    check("$mode: committed transaction, invisible to another connection until COMMIT", function () use ($pdo, $db, $emulate, &$orderId) {
        $other = pdoConnect($db, $emulate);
        truthy($pdo->beginTransaction(), 'beginTransaction');
        truthy($pdo->inTransaction(), 'inTransaction');
        $lines = [[1, 2], [2, 3]];
        $cents = 0;
        $lock = $pdo->prepare('SELECT price, stock FROM products WHERE id = ? FOR UPDATE');
        foreach ($lines as [$productId, $qty]) {
            $lock->execute([$productId]);
            $p = $lock->fetch();
            $lock->closeCursor();
            truthy(is_string($p['price']), 'DECIMAL is a string');
            truthy($p['stock'] >= $qty, 'stock');
            $cents += (int) round(((float) $p['price']) * 100) * $qty;
        }
        $ins = $pdo->prepare('INSERT INTO orders (customer_id, placed_at, ship_date, total, note, external_ref) VALUES (?, ?, ?, ?, ?, ?)');
        $ins->bindValue(1, 1, PDO::PARAM_INT);
        $ins->bindValue(2, PLACED_AT);
        $ins->bindValue(3, '2024-03-04');
        $ins->bindValue(4, sprintf('%d.%02d', intdiv($cents, 100), $cents % 100));
        $ins->bindValue(5, null, PDO::PARAM_NULL);
        $ins->bindValue(6, BIG_REF, PDO::PARAM_INT);
        $ins->execute();
        $orderId = (int) $pdo->lastInsertId();
        truthy($orderId >= 1, 'order id');
        $item = $pdo->prepare('INSERT INTO order_items (order_id, product_id, qty, unit_price) SELECT ?, id, ?, price FROM products WHERE id = ?');
        $take = $pdo->prepare('UPDATE products SET stock = stock - ? WHERE id = ? AND stock >= ?');
        foreach ($lines as [$productId, $qty]) {
            $item->execute([$orderId, $qty, $productId]);
            eq($item->rowCount(), 1, 'items inserted');
            $take->execute([$qty, $productId, $qty]);
            eq($take->rowCount(), 1, 'stock taken');
        }
        eq((int) $other->query('SELECT COUNT(*) FROM orders')->fetchColumn(), 0, 'seen before commit');
        truthy($pdo->commit(), 'commit');
        truthy(!$pdo->inTransaction(), 'still in a transaction');
        $o = $other->query("SELECT o.total, SUM(i.qty * i.unit_price) AS sum, COUNT(*) AS line_count FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = $orderId GROUP BY o.id, o.total")->fetch();
        eq($o['total'], '53.48');
        eq($o['sum'], '53.48');
        eq((int) $o['line_count'], 2);
        eq(array_map('intval', $other->query('SELECT stock FROM products WHERE id IN (1, 2) ORDER BY id')->fetchAll(PDO::FETCH_COLUMN)), [8, 97]);
    });

    check("$mode: rolled-back transaction leaves no trace", function () use ($pdo) {
        $pdo->beginTransaction();
        $pdo->prepare('INSERT INTO orders (customer_id, placed_at, total) VALUES (?, NOW(6), ?)')->execute([2, '35.00']);
        $upd = $pdo->prepare('UPDATE products SET stock = stock - 3 WHERE sku = ?');
        $upd->execute(['SKU-3']);
        eq($upd->rowCount(), 1);
        eq((int) $pdo->query('SELECT COUNT(*) FROM orders')->fetchColumn(), 2, 'inside');
        truthy($pdo->rollBack(), 'rollBack');
        eq((int) $pdo->query('SELECT COUNT(*) FROM orders')->fetchColumn(), 1, 'after rollback');
        eq((int) $pdo->query("SELECT stock FROM products WHERE sku = 'SKU-3'")->fetchColumn(), 3);
    });

    check("$mode: types read back (DECIMAL, DATETIME(6), DATE, BIGINT, NULL)", function () use ($pdo, &$orderId) {
        foreach (['query', 'prepare'] as $how) {
            if ($how === 'query') {
                $stmt = $pdo->query("SELECT * FROM orders WHERE id = $orderId");
            } else {
                $stmt = $pdo->prepare('SELECT * FROM orders WHERE id = ?');
                $stmt->execute([$orderId]);
            }
            $o = $stmt->fetch();
            // mysqlnd gives integers as PHP ints in both modes (PHP 8.1 and later).
            eq($o['id'], $orderId, "$how id");
            eq($o['customer_id'], 1, "$how customer_id");
            eq($o['placed_at'], PLACED_AT, "$how placed_at");
            eq($o['ship_date'], '2024-03-04', "$how ship_date");
            eq($o['total'], '53.48', "$how total");
            eq($o['note'], null, "$how note");
            eq($o['external_ref'], BIG_REF, "$how external_ref");
            $meta = [];
            foreach (['placed_at', 'ship_date', 'total', 'external_ref', 'note'] as $i => $col) {
                $m = $stmt->getColumnMeta(array_search($col, array_keys($o), true));
                $meta[$col] = $m['native_type'];
            }
            eq($meta, ['placed_at' => 'DATETIME', 'ship_date' => 'DATE', 'total' => 'NEWDECIMAL', 'external_ref' => 'LONGLONG', 'note' => 'VAR_STRING'], "$how native types");
        }
        $min = $pdo->prepare('SELECT ? + 0 AS v, CAST(? AS UNSIGNED) AS u');
        $min->bindValue(1, PHP_INT_MIN, PDO::PARAM_INT);
        $min->bindValue(2, '18446744073709551615');
        $min->execute();
        $r = $min->fetch();
        eq((string) $r['v'], (string) PHP_INT_MIN, 'BIGINT minimum');
        eq((string) $r['u'], '18446744073709551615', 'BIGINT UNSIGNED maximum');
    });

    check("$mode: rowCount of UPDATE is changed rows, or matched rows with MYSQL_ATTR_FOUND_ROWS", function () use ($pdo, $db, $emulate) {
        $upd = $pdo->prepare('UPDATE products SET price = ? WHERE sku IN (?, ?)');
        $upd->execute(['4.50', 'SKU-1', 'SKU-2']);
        eq($upd->rowCount(), 1, 'changed');
        $found = pdoConnect($db, $emulate, [PDO::MYSQL_ATTR_FOUND_ROWS => true]);
        $upd = $found->prepare('UPDATE products SET price = ? WHERE sku IN (?, ?)');
        $upd->execute(['19.99', 'SKU-1', 'SKU-2']);
        eq($upd->rowCount(), 2, 'matched');
        $upd->execute(['4.50', 'SKU-2', 'no-such-sku']);
        eq($upd->rowCount(), 1, 'matched, unchanged');
        eq($pdo->exec("UPDATE products SET stock = 0 WHERE sku = 'no-such-sku'"), 0);
    });

    check("$mode: duplicate key is SQLSTATE 23000 / 1062, and the connection goes on", function () use ($pdo) {
        $e = thrown(fn () => $pdo->prepare('INSERT INTO customers (email, name, created_at) VALUES (?, ?, NOW())')->execute(['c0@example.com', 'Again']));
        truthy($e instanceof PDOException, 'a PDOException: ' . get_class($e));
        eq($e->getCode(), '23000', 'getCode');
        eq($e->errorInfo[0], '23000', 'errorInfo[0]');
        eq($e->errorInfo[1], 1062, 'errorInfo[1]');
        truthy(str_starts_with($e->errorInfo[2], "Duplicate entry 'c0@example.com' for key"), 'message: ' . $e->errorInfo[2]);
        eq((int) $pdo->query("SELECT COUNT(*) FROM customers WHERE email = 'c0@example.com'")->fetchColumn(), 1);
        $e = thrown(fn () => $pdo->exec("INSERT INTO products (sku, title, price, stock) VALUES ('SKU-1', 'x', 1, 1)"));
        eq($e->errorInfo[1] ?? null, 1062, 'exec()');
        eq($pdo->query('SELECT 1 + 1')->fetchColumn(), 2);
    });

    check("$mode: duplicate key inside a transaction undoes only that statement", function () use ($pdo) {
        $pdo->beginTransaction();
        $ins = $pdo->prepare('INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?)');
        $ins->execute(['SKU-5', 'Spoon', '2.00', 50]);
        $id = $pdo->lastInsertId();
        $e = thrown(fn () => $ins->execute(['SKU-1', 'Clash', '1.00', 1]));
        eq($e->errorInfo[1] ?? null, 1062);
        truthy($pdo->inTransaction(), 'transaction still open');
        $pdo->commit();
        eq($pdo->query("SELECT id FROM products WHERE sku = 'SKU-5'")->fetchColumn(), (int) $id);
        eq($pdo->query('SELECT sku FROM products ORDER BY id')->fetchAll(PDO::FETCH_COLUMN), ['SKU-1', 'SKU-2', 'SKU-3', 'SKU-5']);
    });

    check("$mode: other errors: 1064 / 42000, 1146 / 42S02", function () use ($pdo) {
        $e = thrown(fn () => $pdo->query('SELEC 1'));
        eq([$e->getCode(), $e->errorInfo[1] ?? null], ['42000', 1064]);
        $e = thrown(function () use ($pdo) {
            $s = $pdo->prepare('SELECT * FROM no_such_table WHERE id = ?');
            $s->execute([1]);
        });
        eq([$e->getCode(), $e->errorInfo[1] ?? null], ['42S02', 1146]);
    });

    check("$mode: fetch modes: KEY_PAIR, COLUMN, IN list of placeholders, reuse of a statement", function () use ($pdo) {
        $pairs = $pdo->query('SELECT sku, price FROM products ORDER BY id')->fetchAll(PDO::FETCH_KEY_PAIR);
        eq($pairs, ['SKU-1' => '19.99', 'SKU-2' => '4.50', 'SKU-3' => '35.00', 'SKU-5' => '2.00']);
        $skus = ['SKU-3', 'SKU-5'];
        $in = $pdo->prepare('SELECT SUM(stock) FROM products WHERE sku IN (' . implode(',', array_fill(0, count($skus), '?')) . ')');
        $in->execute($skus);
        eq((int) $in->fetchColumn(), 53);
        $cost = $pdo->prepare('SELECT price * :qty FROM products WHERE sku = :sku');
        foreach ([['SKU-1', 3, '59.97'], ['SKU-2', 10, '45.00']] as [$sku, $qty, $want]) {
            $cost->bindValue(':qty', $qty, PDO::PARAM_INT);
            $cost->bindValue(':sku', $sku);
            $cost->execute();
            eq((string) $cost->fetchColumn(), $want, "cost of $sku");
        }
    });

    if ($emulate) {
        check("$mode: several statements in one query(), with nextRowset()", function () use ($pdo) {
            $stmt = $pdo->query("SELECT COUNT(*) AS n FROM orders; UPDATE products SET stock = stock + 1 WHERE sku = 'SKU-3'; SELECT sku FROM products WHERE stock > 5 ORDER BY id");
            eq($stmt->fetchAll(), [['n' => 1]], 'first result');
            truthy($stmt->nextRowset(), 'second result');
            eq($stmt->columnCount(), 0, 'UPDATE has no columns');
            eq($stmt->rowCount(), 1, 'UPDATE rowCount');
            truthy($stmt->nextRowset(), 'third result');
            eq($stmt->fetchAll(PDO::FETCH_COLUMN), ['SKU-1', 'SKU-2', 'SKU-5'], 'third result');
            truthy(!$stmt->nextRowset(), 'no fourth result');
            eq((int) $pdo->query("SELECT stock FROM products WHERE sku = 'SKU-3'")->fetchColumn(), 4);
        });
    }
}

// ---------------------------------------------------------------------------------------
// mysqli

function mysqliConnect(string $db): mysqli
{
    global $host, $port;
    $m = new mysqli($host, 'root', '', $db, $port);
    $m->set_charset('utf8mb4');
    return $m;
}

function mysqliFlow(): void
{
    mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
    $db = 'php_mysqli_' . getmypid();
    adminDatabase($db, true);
    try {
        mysqliChecks($db);
    } finally {
        adminDatabase($db, false);
    }
}

/** Every result of a multi_query: a list of rows for a result set, affected rows otherwise. */
function drainMulti(mysqli $m): array
{
    $out = [];
    do {
        $res = $m->store_result();
        if ($res instanceof mysqli_result) {
            $out[] = $res->fetch_all(MYSQLI_ASSOC);
            $res->free();
        } else {
            $out[] = $m->affected_rows;
        }
    } while ($m->more_results() && $m->next_result());
    return $out;
}

function mysqliChecks(string $db): void
{
    global $afterFailure;
    $m = mysqliConnect($db);
    $afterFailure = function () use ($m) {
        $m->rollback();
        $m->autocommit(true);
    };

    // mysqli::refresh sends COM_REFRESH (FLUSH TABLES and LOGS by bits), as admin tools do.
    check('mysqli: refresh (COM_REFRESH) of tables and logs', function () use ($m) {
        truthy($m->refresh(MYSQLI_REFRESH_TABLES | MYSQLI_REFRESH_LOG), 'refresh');
        eq($m->query('SELECT 1')->fetch_row(), ['1']);
    });

    check('mysqli: schema created with multi_query', function () use ($m) {
        eq($m->character_set_name(), 'utf8mb4');
        truthy($m->multi_query(implode(";\n", SCHEMA)), 'multi_query');
        eq(drainMulti($m), [0, 0, 0, 0]);
        $tables = array_column($m->query('SHOW TABLES')->fetch_all(MYSQLI_NUM), 0);
        sort($tables);
        eq($tables, ['customers', 'order_items', 'orders', 'products']);
    });

    check('mysqli: prepared INSERT reused with bind_param: insert_id, affected_rows', function () use ($m) {
        $stmt = $m->prepare('INSERT INTO customers (email, name, created_at) VALUES (?, ?, ?)');
        eq($stmt->param_count, 3);
        $email = $name = $created = '';
        $stmt->bind_param('sss', $email, $name, $created);
        foreach (NAMES as $i => $n) {
            [$email, $name, $created] = ["c$i@example.com", $n, sprintf('2024-01-%02d 09:30:00.25', 15 + $i)];
            $stmt->execute();
            eq($stmt->affected_rows, 1);
            eq($stmt->insert_id, $i + 1);
            eq($m->insert_id, $i + 1);
        }
        $stmt->close();
    });

    check('mysqli: text round-trips through get_result, bind_result and real_escape_string', function () use ($m) {
        $stmt = $m->prepare('SELECT id, name, HEX(name) FROM customers WHERE email = ?');
        foreach (NAMES as $i => $n) {
            $email = "c$i@example.com";
            $stmt->bind_param('s', $email);
            $stmt->execute();
            $row = $stmt->get_result()->fetch_row();
            eq($row, [$i + 1, $n, strtoupper(bin2hex($n))], "customer $i");
        }
        $stmt->close();
        $stmt = $m->prepare('SELECT email FROM customers WHERE name = ?');
        $name = NAMES[2];
        $stmt->bind_param('s', $name);
        $stmt->execute();
        $email = null;
        $stmt->bind_result($email);
        truthy($stmt->fetch(), 'a row');
        eq($email, 'c2@example.com');
        truthy($stmt->fetch() === null, 'one row only');
        $stmt->close();
        $escaped = $m->real_escape_string(NAMES[3]);
        eq($m->query("SELECT email FROM customers WHERE name = '$escaped'")->fetch_column(), 'c3@example.com');
    });

    check('mysqli: BLOB sent with send_long_data in pieces, read back exactly', function () use ($m) {
        $stmt = $m->prepare('INSERT INTO products (sku, title, price, stock, thumbnail) VALUES (?, ?, ?, ?, ?)');
        $sku = $title = $price = '';
        $stock = 0;
        $blob = null;
        $stmt->bind_param('sssib', $sku, $title, $price, $stock, $blob);
        $blobs = [str_repeat(everyByte(), 200), "\x00\xff", null];
        foreach (CATALOGUE as $i => [$sku, $title, $price, $stock]) {
            $blob = null;
            if ($blobs[$i] !== null) {
                foreach (str_split($blobs[$i], 8000) as $piece) {
                    $stmt->send_long_data(4, $piece);
                }
            }
            $stmt->execute();
            eq($stmt->insert_id, $i + 1);
        }
        $stmt->close();
        $rows = $m->query('SELECT thumbnail, HEX(thumbnail) AS hex FROM products ORDER BY id')->fetch_all(MYSQLI_ASSOC);
        foreach ($blobs as $i => $bytes) {
            eq($rows[$i]['thumbnail'], $bytes, "bytes of row $i");
            eq($rows[$i]['hex'], $bytes === null ? null : strtoupper(bin2hex($bytes)), "HEX of row $i");
        }
    });

    $orderId = null;
    check('mysqli: committed transaction with prepared statements', function () use ($m, $db, &$orderId) {
        $other = mysqliConnect($db);
        $m->begin_transaction();
        $lock = $m->prepare('SELECT price, stock FROM products WHERE id = ? FOR UPDATE');
        $cents = 0;
        foreach ([[1, 2], [2, 3]] as [$productId, $qty]) {
            $lock->bind_param('i', $productId);
            $lock->execute();
            $p = $lock->get_result()->fetch_assoc();
            truthy(is_string($p['price']) && is_int($p['stock']), 'types from get_result');
            $cents += (int) round(((float) $p['price']) * 100) * $qty;
        }
        $lock->close();
        $ins = $m->prepare('INSERT INTO orders (customer_id, placed_at, ship_date, total, note, external_ref) VALUES (?, ?, ?, ?, ?, ?)');
        $customer = 1;
        $placed = PLACED_AT;
        $ship = '2024-03-04';
        $total = sprintf('%d.%02d', intdiv($cents, 100), $cents % 100);
        $note = null;
        $ref = BIG_REF;
        $ins->bind_param('issssi', $customer, $placed, $ship, $total, $note, $ref);
        $ins->execute();
        $orderId = $ins->insert_id;
        $ins->close();
        $item = $m->prepare('INSERT INTO order_items (order_id, product_id, qty, unit_price) SELECT ?, id, ?, price FROM products WHERE id = ?');
        $take = $m->prepare('UPDATE products SET stock = stock - ? WHERE id = ? AND stock >= ?');
        foreach ([[1, 2], [2, 3]] as [$productId, $qty]) {
            $item->bind_param('iii', $orderId, $qty, $productId);
            $item->execute();
            eq($item->affected_rows, 1);
            $take->bind_param('iii', $qty, $productId, $qty);
            $take->execute();
            eq($take->affected_rows, 1);
        }
        eq((int) $other->query('SELECT COUNT(*) FROM orders')->fetch_column(), 0, 'seen before commit');
        truthy($m->commit(), 'commit');
        eq($other->query("SELECT total FROM orders WHERE id = $orderId")->fetch_column(), '53.48');
        eq($other->query('SELECT GROUP_CONCAT(stock ORDER BY id) FROM products WHERE id IN (1, 2)')->fetch_column(), '8,97');
        $other->close();
    });

    check('mysqli: rolled-back transaction leaves no trace', function () use ($m) {
        $m->autocommit(false);
        $m->query("INSERT INTO orders (customer_id, placed_at, total) VALUES (2, NOW(6), '35.00')");
        eq($m->affected_rows, 1);
        $m->query("UPDATE products SET stock = stock - 3 WHERE sku = 'SKU-3'");
        eq((int) $m->query('SELECT COUNT(*) FROM orders')->fetch_column(), 2, 'inside');
        truthy($m->rollback(), 'rollback');
        $m->autocommit(true);
        eq((int) $m->query('SELECT COUNT(*) FROM orders')->fetch_column(), 1, 'after rollback');
        eq((int) $m->query("SELECT stock FROM products WHERE sku = 'SKU-3'")->fetch_column(), 3);
    });

    check('mysqli: types and column metadata through get_result (binary protocol)', function () use ($m, &$orderId) {
        $stmt = $m->prepare('SELECT id, placed_at, ship_date, total, note, external_ref FROM orders WHERE id = ?');
        $stmt->bind_param('i', $orderId);
        $stmt->execute();
        $res = $stmt->get_result();
        eq($res->fetch_assoc(), ['id' => $orderId, 'placed_at' => PLACED_AT, 'ship_date' => '2024-03-04', 'total' => '53.48', 'note' => null, 'external_ref' => BIG_REF]);
        $fields = [];
        foreach ($res->fetch_fields() as $f) {
            $fields[$f->name] = [$f->type, $f->decimals];
        }
        eq($fields['placed_at'], [MYSQLI_TYPE_DATETIME, 6], 'placed_at');
        eq($fields['ship_date'][0], MYSQLI_TYPE_DATE, 'ship_date');
        eq($fields['total'], [MYSQLI_TYPE_NEWDECIMAL, 2], 'total');
        eq($fields['external_ref'][0], MYSQLI_TYPE_LONGLONG, 'external_ref');
        eq($fields['note'][0], MYSQLI_TYPE_VAR_STRING, 'note');
        $id = $res->fetch_field_direct(0);
        truthy(($id->flags & MYSQLI_PRI_KEY_FLAG) && ($id->flags & MYSQLI_AUTO_INCREMENT_FLAG) && ($id->flags & MYSQLI_NOT_NULL_FLAG), "id flags {$id->flags}");
        $stmt->close();
    });

    check('mysqli: types through query() (text protocol), as strings and as native numbers', function () use ($m, $db, &$orderId) {
        $row = $m->query("SELECT id, placed_at, total, external_ref, note FROM orders WHERE id = $orderId")->fetch_assoc();
        eq($row, ['id' => (string) $orderId, 'placed_at' => PLACED_AT, 'total' => '53.48', 'external_ref' => (string) BIG_REF, 'note' => null]);
        global $host, $port;
        $native = mysqli_init();
        $native->options(MYSQLI_OPT_INT_AND_FLOAT_NATIVE, 1);
        $native->real_connect($host, 'root', '', $db, $port);
        $row = $native->query("SELECT id, external_ref, total, 1.5e0 AS d FROM orders WHERE id = $orderId")->fetch_assoc();
        eq($row, ['id' => $orderId, 'external_ref' => BIG_REF, 'total' => '53.48', 'd' => 1.5]);
        $native->close();
    });

    check('mysqli: UPDATE affected_rows and info (Rows matched / Changed)', function () use ($m) {
        $m->query("UPDATE products SET price = '4.50' WHERE sku IN ('SKU-1', 'SKU-2')");
        eq($m->affected_rows, 1);
        truthy(preg_match('/^Rows matched: 2\s+Changed: 1\s+Warnings: 0$/', (string) $m->info) === 1, "info: {$m->info}");
        $m->query("UPDATE products SET price = '19.99' WHERE sku = 'SKU-1'");
        $m->query("INSERT INTO products (sku, title, price, stock) VALUES ('SKU-6', 'a', 1, 1), ('SKU-7', 'b', 2, 2)");
        eq($m->affected_rows, 2);
        truthy(preg_match('/^Records: 2\s+Duplicates: 0\s+Warnings: 0$/', (string) $m->info) === 1, "info: {$m->info}");
        $m->query("DELETE FROM products WHERE sku IN ('SKU-6', 'SKU-7')");
        eq($m->affected_rows, 2);
    });

    check('mysqli: multi_query with result sets and an UPDATE between them', function () use ($m) {
        truthy($m->multi_query("SELECT COUNT(*) AS n FROM orders; UPDATE products SET stock = stock + 1 WHERE sku = 'SKU-3'; SELECT sku, price FROM products WHERE stock > 5 ORDER BY id"), 'multi_query');
        eq(drainMulti($m), [
            [['n' => '1']],
            1,
            [['sku' => 'SKU-1', 'price' => '19.99'], ['sku' => 'SKU-2', 'price' => '4.50']],
        ]);
        eq((int) $m->query("SELECT stock FROM products WHERE sku = 'SKU-3'")->fetch_column(), 4);
    });

    check('mysqli: duplicate key is errno 1062, SQLSTATE 23000, and the connection goes on', function () use ($m) {
        $e = thrown(fn () => $m->query("INSERT INTO customers (email, name, created_at) VALUES ('c0@example.com', 'Again', NOW())"));
        truthy($e instanceof mysqli_sql_exception, 'mysqli_sql_exception: ' . get_class($e));
        eq($e->getCode(), 1062);
        eq($e->getSqlState(), '23000');
        eq($m->errno, 1062);
        eq($m->sqlstate, '23000');
        eq((int) $m->query('SELECT COUNT(*) FROM customers')->fetch_column(), count(NAMES));
        eq($m->errno, 0, 'errno after a good statement');
        // The same through a prepared statement inside a transaction: only it is undone.
        $m->begin_transaction();
        $stmt = $m->prepare('INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?)');
        [$sku, $title, $price, $stock] = ['SKU-5', 'Spoon', '2.00', 50];
        $stmt->bind_param('sssi', $sku, $title, $price, $stock);
        $stmt->execute();
        $sku = 'SKU-1';
        $e = thrown(fn () => $stmt->execute());
        eq([$e->getCode(), $e->getSqlState(), $stmt->errno], [1062, '23000', 1062]);
        $m->commit();
        eq(array_column($m->query('SELECT sku FROM products ORDER BY id')->fetch_all(), 0), ['SKU-1', 'SKU-2', 'SKU-3', 'SKU-5']);
    });

    check('mysqli: INSERT IGNORE of a duplicate is warning 1062', function () use ($m) {
        $m->query("INSERT IGNORE INTO customers (email, name, created_at) VALUES ('c1@example.com', 'Dup', NOW())");
        eq($m->affected_rows, 0);
        eq($m->warning_count, 1);
        $w = $m->query('SHOW WARNINGS')->fetch_assoc();
        eq([$w['Level'], (int) $w['Code']], ['Warning', 1062]);
    });

    check('mysqli: without exceptions, errors are in errno / error', function () use ($m) {
        mysqli_report(MYSQLI_REPORT_OFF);
        try {
            eq($m->query('SELECT * FROM no_such_table'), false);
            eq([$m->errno, $m->sqlstate], [1146, '42S02']);
            eq($m->prepare('SELEC ?'), false);
            eq([$m->errno, $m->sqlstate], [1064, '42000']);
            eq($m->query('SELECT 40 + 2')->fetch_row(), ['42']);
        } finally {
            mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
        }
    });

    $m->close();
}

try {
    pdoFlow(true);
    pdoFlow(false);
    mysqliFlow();
} catch (Throwable $e) {
    $failed++;
    echo 'FAILED the program stopped: ' . get_class($e) . ': ' . $e->getMessage() . "\n" . $e->getTraceAsString() . "\n";
}
echo "php-client: $passed passed, $failed failed\n";
exit($failed === 0 ? 0 : 1);
