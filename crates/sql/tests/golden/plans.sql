-- Golden plan tests: each EXPLAIN below is run against the tables made here, and its rows
-- are compared with plans.out. A planner change that alters a plan shows in review as a diff
-- of plans.out; accept it with
--   QUILL_UPDATE_GOLDEN=1 cargo test -p quill-sql --test golden_plans
-- Statements end with `;` at the end of a line; lines starting with `--` are comments.

CREATE DATABASE shop;
USE shop;
CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, city VARCHAR(40), born DATE, KEY by_city (city), UNIQUE KEY by_name (name));
CREATE TABLE orders (id INT PRIMARY KEY AUTO_INCREMENT, customer INT NOT NULL, total DECIMAL(10,2), placed DATETIME, KEY by_customer (customer), KEY by_placed (placed));
CREATE TABLE items (order_id INT, line INT, sku VARCHAR(20), qty INT, PRIMARY KEY (order_id, line));
CREATE TABLE notes (body TEXT, author INT);
INSERT INTO customers VALUES (1, 'ann', 'Oslo', '1990-01-01'), (2, 'bob', 'Rome', '1985-06-30'), (3, 'cid', 'Oslo', NULL);
INSERT INTO orders (customer, total, placed) VALUES (1, 10.50, '2024-01-02 10:00:00'), (2, 99.99, '2024-02-03 11:00:00'), (1, 5.00, '2024-03-04 12:00:00');
INSERT INTO items VALUES (1, 1, 'a', 2), (1, 2, 'b', 1), (2, 1, 'a', 5);
INSERT INTO notes VALUES ('hello', 1), ('world', 2);

-- No table.
EXPLAIN SELECT 1 + 1;
-- Primary key: a point, a list, a range; a full scan for an unindexed column.
EXPLAIN SELECT * FROM customers WHERE id = 2;
EXPLAIN SELECT * FROM customers WHERE id IN (1, 3);
EXPLAIN SELECT * FROM customers WHERE id BETWEEN 1 AND 2;
EXPLAIN SELECT * FROM customers WHERE born > '1986-01-01';
-- Secondary indexes: equality, a unique key, a range, the whole index in ORDER BY ... LIMIT.
EXPLAIN SELECT * FROM customers WHERE city = 'Oslo';
EXPLAIN SELECT id FROM customers WHERE name = 'bob';
EXPLAIN SELECT * FROM orders WHERE placed >= '2024-02-01 00:00:00';
EXPLAIN SELECT * FROM orders ORDER BY placed LIMIT 2;
-- A composite primary key: its prefix.
EXPLAIN SELECT * FROM items WHERE order_id = 1;
EXPLAIN SELECT * FROM items WHERE order_id = 1 AND line = 2;
-- A table without a primary key.
EXPLAIN SELECT * FROM notes WHERE author = 1;
-- Joins: through an index of the inner table, and a hash join where there is none.
EXPLAIN SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer = c.id;
EXPLAIN SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer = c.id WHERE c.id = 1;
EXPLAIN SELECT n.body, c.name FROM notes n JOIN customers c ON c.name = n.body;
EXPLAIN SELECT * FROM notes a JOIN notes b ON a.author = b.author;
EXPLAIN SELECT * FROM customers c LEFT JOIN orders o ON o.customer = c.id;
-- Derived tables, UNION, a recursive CTE, a subquery, aggregates.
EXPLAIN SELECT * FROM (SELECT customer, SUM(total) AS s FROM orders GROUP BY customer) t WHERE s > 10;
EXPLAIN SELECT id FROM customers UNION SELECT customer FROM orders;
EXPLAIN WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT * FROM n;
EXPLAIN SELECT * FROM customers WHERE id IN (SELECT customer FROM orders WHERE total > 50);
EXPLAIN SELECT city, COUNT(*) FROM customers GROUP BY city;
