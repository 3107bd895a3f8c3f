package quill.javaclient;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DataTruncation;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLSyntaxErrorException;
import java.sql.SQLTransactionRollbackException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * A small orders application on the schema of {@link Schema}, written as an application uses
 * JDBC: prepared statements with generated keys, batches, transactions committed and rolled
 * back, savepoints, SELECT ... FOR UPDATE against a second connection, every common type read
 * back, and SQL errors caught by code and SQLState while the connection goes on.
 */
final class OrdersProgram {

    private static final String INSERT_ORDER =
            "INSERT INTO orders (customer_id, status, total, placed_on, placed_at) VALUES (?, ?, ?, ?, ?)";
    private static final String INSERT_ITEM =
            "INSERT INTO order_items (order_id, line_no, sku, qty, unit_price) VALUES (?, ?, ?, ?, ?)";
    private static final int BATCH = 40;

    private final Main.Env env;
    private final Report report;
    private final List<Long> customerIds = new ArrayList<>();
    private final List<Long> batchOrderIds = new ArrayList<>();
    private long committedOrderId = -1;

    OrdersProgram(Main.Env env, Report report) {
        this.env = env;
        this.report = report;
    }

    void run() {
        try (Connection conn = env.connect(); Connection other = env.connect()) {
            report.step("insert customers", () -> customers(conn));
            report.step("duplicate key", () -> duplicateKey(conn));
            report.step("batch insert orders", () -> batchOrders(conn));
            report.step("foreign key errors", () -> foreignKeyErrors(conn));
            report.step("committed transaction", () -> transaction(conn, () -> committed(conn, other)));
            report.step("rolled back transaction", () -> transaction(conn, () -> rolledBack(conn, other)));
            report.step("savepoints", () -> transaction(conn, () -> savepoints(conn, other)));
            report.step("error inside a transaction", () -> transaction(conn, () -> errorInTransaction(conn, other)));
            report.step("SELECT ... FOR UPDATE", () -> transaction(conn, () -> selectForUpdate(conn, other)));
            report.step("matched rows", () -> matchedRows(conn));
            report.step("types round trip", () -> types(conn));
            report.step("fetch in chunks", () -> fetchInChunks(conn));
            report.step("SQL errors", () -> sqlErrors(conn));
            report.step("isolation levels", () -> isolation(conn, other));
        } catch (SQLException e) {
            report.fail("connect for the orders program", Report.describe(e));
        }
    }

    /** Runs body with autocommit off, and puts the connection back as it was whatever happens. */
    private static void transaction(Connection conn, Report.Body body) throws Exception {
        conn.setAutoCommit(false);
        try {
            body.run();
        } finally {
            try {
                conn.rollback();
            } finally {
                conn.setAutoCommit(true);
            }
        }
    }

    private void customers(Connection conn) throws SQLException {
        String[][] people = {
            {"zoe@example.com", "Zoë Ångström", null},
            {"li@example.com", "李小龍", "prefers 📦 lockers"},
            {"omega@example.com", "Ωmega 🚀 Ltd", "VAT ‘exempt’, \"quoted\" and back\\slash"},
        };
        List<String> inserted = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement(
                "INSERT INTO customers (email, name, note) VALUES (?, ?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            for (String[] p : people) {
                ps.setString(1, p[0]);
                ps.setString(2, p[1]);
                if (p[2] == null) {
                    ps.setNull(3, Types.VARCHAR);
                } else {
                    ps.setString(3, p[2]);
                }
                int count = ps.executeUpdate();
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    long key = keys.next() ? keys.getLong(1) : -1;
                    customerIds.add(key);
                    inserted.add(count + ":" + key + ":" + p[1] + ":" + p[2]);
                }
            }
        }
        boolean increasing = customerIds.get(0) > 0 && customerIds.get(0) < customerIds.get(1) && customerIds.get(1) < customerIds.get(2);
        report.check("prepared INSERT returns generated keys", increasing, "keys " + customerIds);

        List<String> readBack = new ArrayList<>();
        List<String> defaults = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT id, name, note, credit_limit, TIMESTAMPDIFF(SECOND, created_at, NOW(6)) FROM customers WHERE email = ?")) {
            for (int i = 0; i < people.length; i++) {
                ps.setString(1, people[i][0]);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        readBack.add("missing " + people[i][0]);
                        continue;
                    }
                    readBack.add("1:" + rs.getLong(1) + ":" + rs.getString(2) + ":" + rs.getString(3));
                    long age = rs.getLong(5);
                    defaults.add(rs.getBigDecimal(4) + (age >= 0 && age < 120 ? " recent" : " created " + age + " s ago"));
                }
            }
        }
        report.eq("customers read back by email (key, non-ASCII name, note or NULL)", inserted, readBack);
        report.eq("column defaults filled in (credit_limit, created_at)", List.of("500.00 recent", "500.00 recent", "500.00 recent"), defaults);

        try (Statement st = conn.createStatement()) {
            int count = st.executeUpdate("INSERT INTO customers (email, name) VALUES ('dup@example.com', 'Dup Licate')",
                    Statement.RETURN_GENERATED_KEYS);
            long key;
            try (ResultSet keys = st.getGeneratedKeys()) {
                key = keys.next() ? keys.getLong(1) : -1;
            }
            long lastInsertId;
            try (ResultSet rs = st.executeQuery("SELECT LAST_INSERT_ID()")) {
                rs.next();
                lastInsertId = rs.getLong(1);
            }
            report.check("plain Statement generated key is LAST_INSERT_ID()", count == 1 && key == lastInsertId && key > customerIds.get(2),
                    "count " + count + ", key " + key + ", LAST_INSERT_ID() " + lastInsertId);
            customerIds.add(key);
        }
    }

    private void duplicateKey(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO customers (email, name) VALUES (?, ?)")) {
            ps.setString(1, "li@example.com");
            ps.setString(2, "Another Li");
            report.expectError("duplicate email is error 1062, SQLState 23000", 1062, "23000",
                    SQLIntegrityConstraintViolationException.class, ps::executeUpdate);
        }
        report.eq("connection goes on after the error", 4L, count(conn, "SELECT COUNT(*) FROM customers"));
    }

    private void batchOrders(Connection conn) throws SQLException {
        BigDecimal expectedSum = BigDecimal.ZERO.setScale(2);
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ORDER, Statement.RETURN_GENERATED_KEYS)) {
            for (int i = 0; i < BATCH; i++) {
                BigDecimal total = BigDecimal.valueOf(1999 + i * 137L, 2);
                expectedSum = expectedSum.add(total);
                ps.setLong(1, customerIds.get(i % 3));
                ps.setString(2, i % 4 == 0 ? "shipped" : "new");
                ps.setBigDecimal(3, total);
                ps.setObject(4, LocalDate.of(2024, 1, 1).plusDays(i));
                ps.setObject(5, LocalDateTime.of(2024, 1, 1, 8, 0).plusDays(i).plusMinutes(i * 7L));
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            boolean countsOk = counts.length == BATCH
                    && Arrays.stream(counts).allMatch(c -> c == 1 || c == Statement.SUCCESS_NO_INFO);
            report.check("executeBatch update counts", countsOk, Arrays.toString(counts));
            try (ResultSet keys = ps.getGeneratedKeys()) {
                while (keys.next()) {
                    batchOrderIds.add(keys.getLong(1));
                }
            }
        }
        report.eq("batch generated keys are the ids of the rows inserted", ids(conn, "SELECT id FROM orders ORDER BY id"), batchOrderIds);
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT COUNT(*), SUM(total) FROM orders")) {
            rs.next();
            report.eq("batch rows and SUM(total)", BATCH + " " + expectedSum, rs.getLong(1) + " " + rs.getBigDecimal(2));
        }
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT status, total, placed_on, placed_at, CAST(placed_at AS CHAR) FROM orders WHERE id = ?")) {
            ps.setLong(1, batchOrderIds.isEmpty() ? -1 : batchOrderIds.get(7));
            try (ResultSet rs = ps.executeQuery()) {
                String got = rs.next()
                        ? rs.getString(1) + " " + rs.getBigDecimal(2) + " " + rs.getObject(3, LocalDate.class) + " "
                                + rs.getObject(4, LocalDateTime.class) + " " + rs.getString(5)
                        : "no row";
                report.eq("batch row 8 read back", "new 29.58 2024-01-08 2024-01-08T08:49 2024-01-08 08:49:00", got);
            }
        }
    }

    private void foreignKeyErrors(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ORDER)) {
            ps.setLong(1, 999_999);
            ps.setString(2, "new");
            ps.setBigDecimal(3, BigDecimal.ONE);
            ps.setNull(4, Types.DATE);
            ps.setNull(5, Types.TIMESTAMP);
            report.expectError("order for a missing customer is error 1452, SQLState 23000", 1452, "23000",
                    SQLIntegrityConstraintViolationException.class, ps::executeUpdate);
        }
        try (PreparedStatement ps = conn.prepareStatement("DELETE FROM customers WHERE id = ?")) {
            ps.setLong(1, customerIds.get(0));
            report.expectError("deleting a customer with orders (ON DELETE RESTRICT) is error 1451, SQLState 23000", 1451, "23000",
                    SQLIntegrityConstraintViolationException.class, ps::executeUpdate);
        }
    }

    private void committed(Connection conn, Connection other) throws SQLException {
        long orderId;
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ORDER, Statement.RETURN_GENERATED_KEYS)) {
            ps.setLong(1, customerIds.get(1));
            ps.setString(2, "new");
            ps.setBigDecimal(3, BigDecimal.ZERO);
            ps.setObject(4, LocalDate.of(2024, 6, 1));
            ps.setObject(5, LocalDateTime.of(2024, 6, 1, 12, 30, 15));
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
                keys.next();
                orderId = keys.getLong(1);
            }
        }
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ITEM)) {
            Object[][] items = {{1, "SKU-0001", 2, "9.99"}, {2, "SKU-0002", 1, "120.00"}, {3, "SKU-0003", 10, "0.35"}};
            for (Object[] item : items) {
                ps.setLong(1, orderId);
                ps.setInt(2, (Integer) item[0]);
                ps.setString(3, (String) item[1]);
                ps.setInt(4, (Integer) item[2]);
                ps.setBigDecimal(5, new BigDecimal((String) item[3]));
                ps.addBatch();
            }
            ps.executeBatch();
        }
        report.eq("uncommitted order is invisible to another connection", 0L,
                count(other, "SELECT COUNT(*) FROM orders WHERE id = " + orderId));
        try (PreparedStatement ps = conn.prepareStatement(
                "UPDATE orders SET total = (SELECT SUM(qty * unit_price) FROM order_items WHERE order_id = ?) WHERE id = ?")) {
            ps.setLong(1, orderId);
            ps.setLong(2, orderId);
            report.eq("UPDATE total from a subquery", 1, ps.executeUpdate());
        }
        conn.commit();
        committedOrderId = orderId;
        try (PreparedStatement ps = other.prepareStatement(
                "SELECT o.total, COUNT(i.line_no) FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = ? GROUP BY o.total")) {
            ps.setLong(1, orderId);
            try (ResultSet rs = ps.executeQuery()) {
                report.eq("committed order and items seen by another connection", "143.48 3",
                        rs.next() ? rs.getBigDecimal(1) + " " + rs.getLong(2) : "no row");
            }
        }
    }

    private void rolledBack(Connection conn, Connection other) throws SQLException {
        long orderId;
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ORDER, Statement.RETURN_GENERATED_KEYS)) {
            ps.setLong(1, customerIds.get(0));
            ps.setString(2, "draft");
            ps.setBigDecimal(3, new BigDecimal("5.00"));
            ps.setNull(4, Types.DATE);
            ps.setNull(5, Types.TIMESTAMP);
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
                keys.next();
                orderId = keys.getLong(1);
            }
        }
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ITEM)) {
            ps.setLong(1, orderId);
            ps.setInt(2, 1);
            ps.setString(3, "SKU-DRFT");
            ps.setInt(4, 1);
            ps.setBigDecimal(5, new BigDecimal("5.00"));
            ps.executeUpdate();
        }
        report.eq("the transaction sees its own uncommitted order", 1L, count(conn, "SELECT COUNT(*) FROM orders WHERE id = " + orderId));
        conn.rollback();
        String sql = "SELECT (SELECT COUNT(*) FROM orders WHERE status = 'draft') + (SELECT COUNT(*) FROM order_items WHERE order_id = " + orderId + ")";
        report.eq("rolled back order and item are gone (same connection)", 0L, count(conn, sql));
        report.eq("rolled back order and item are gone (other connection)", 0L, count(other, sql));
    }

    private void savepoints(Connection conn, Connection other) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(INSERT_ITEM)) {
            addItem(ps, 4);
            Savepoint beforeGift = conn.setSavepoint("before_gift");
            addItem(ps, 5);
            conn.rollback(beforeGift);
            addItem(ps, 6);
            Savepoint unnamed = conn.setSavepoint();
            addItem(ps, 7);
            conn.releaseSavepoint(unnamed);
        }
        conn.commit();
        report.eq("rollback to savepoint undoes only what followed it", List.of(1L, 2L, 3L, 4L, 6L, 7L),
                ids(other, "SELECT line_no FROM order_items WHERE order_id = " + committedOrderId + " ORDER BY line_no"));
    }

    private void addItem(PreparedStatement ps, int line) throws SQLException {
        ps.setLong(1, committedOrderId);
        ps.setInt(2, line);
        ps.setString(3, "GIFT-00" + line);
        ps.setInt(4, 1);
        ps.setBigDecimal(5, new BigDecimal("0.00"));
        ps.executeUpdate();
    }

    private void errorInTransaction(Connection conn, Connection other) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("UPDATE customers SET note = ? WHERE id = ?")) {
            ps.setString(1, "vip");
            ps.setLong(2, customerIds.get(0));
            ps.executeUpdate();
        }
        try (Statement st = conn.createStatement()) {
            report.expectError("duplicate key inside a transaction is error 1062", 1062, "23000",
                    SQLIntegrityConstraintViolationException.class,
                    () -> st.executeUpdate("INSERT INTO customers (email, name) VALUES ('zoe@example.com', 'Zoe again')"));
        }
        conn.commit();
        try (PreparedStatement ps = other.prepareStatement("SELECT note FROM customers WHERE id = ?")) {
            ps.setLong(1, customerIds.get(0));
            try (ResultSet rs = ps.executeQuery()) {
                report.eq("a failed statement does not undo the transaction's earlier work", "vip", rs.next() ? rs.getString(1) : "no row");
            }
        }
    }

    private void selectForUpdate(Connection conn, Connection other) throws SQLException {
        long orderId = batchOrderIds.get(0);
        try (PreparedStatement ps = conn.prepareStatement("SELECT status, total FROM orders WHERE id = ? FOR UPDATE")) {
            ps.setLong(1, orderId);
            try (ResultSet rs = ps.executeQuery()) {
                report.eq("SELECT ... FOR UPDATE reads the row", "shipped 19.99", rs.next() ? rs.getString(1) + " " + rs.getBigDecimal(2) : "no row");
            }
        }
        try (Statement st = other.createStatement()) {
            st.execute("SET SESSION innodb_lock_wait_timeout = 1");
        }
        try (PreparedStatement ps = other.prepareStatement("UPDATE orders SET status = 'held' WHERE id = ?")) {
            ps.setLong(1, orderId);
            // The server sends SQLState HY000 with 1205; Connector/J replaces HY000 by its own
            // mapping of the error code (40001, a rollback exception), MariaDB Connector/J keeps it.
            boolean cj = env.target.isConnectorJ();
            long started = System.nanoTime();
            report.expectError("another connection's UPDATE of the locked row waits, then fails with 1205", 1205,
                    cj ? "40001" : "HY000", cj ? SQLTransactionRollbackException.class : SQLException.class, ps::executeUpdate);
            double waited = (System.nanoTime() - started) / 1e9;
            report.check("the lock wait lasted innodb_lock_wait_timeout (1 s)", waited >= 0.9 && waited < 10,
                    String.format("waited %.2f s", waited));
            conn.commit();
            report.eq("after the lock holder commits, the UPDATE goes through", 1, ps.executeUpdate());
        } finally {
            try (Statement st = other.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
            }
        }
    }

    private void matchedRows(Connection conn) throws SQLException {
        // Both drivers ask for the number of rows matched (CLIENT_FOUND_ROWS), not changed: JPA
        // providers' optimistic locking counts on 1 for an UPDATE that changes nothing.
        try (PreparedStatement ps = conn.prepareStatement("UPDATE orders SET status = status WHERE id = ?")) {
            ps.setLong(1, batchOrderIds.get(1));
            report.eq("UPDATE that changes nothing counts the matched row", 1, ps.executeUpdate());
        }
        try (PreparedStatement ps = conn.prepareStatement(
                "INSERT INTO customers (email, name) VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)")) {
            ps.setString(1, "dup@example.com");
            ps.setString(2, "Dup Renamed");
            int changed = ps.executeUpdate();
            int unchanged = ps.executeUpdate();
            ps.setString(1, "new@example.com");
            ps.setString(2, "New Customer");
            int inserted = ps.executeUpdate();
            report.eq("INSERT ... ON DUPLICATE KEY UPDATE counts (updated, unchanged, inserted)", "2 1 1",
                    changed + " " + unchanged + " " + inserted);
        }
    }

    private static final byte[] PAYLOAD = payload();

    private static byte[] payload() {
        byte[] b = new byte[260];
        for (int i = 0; i < 256; i++) {
            b[i] = (byte) i;
        }
        b[256] = 0;
        b[257] = '\'';
        b[258] = '\\';
        b[259] = '"';
        return b;
    }

    /** One type_probe row; a null field is SQL NULL. */
    private record Probe(int id, BigDecimal amount, LocalDateTime happenedAt, LocalDate day, LocalTime duration, String label,
                         byte[] payload, Long big, String ubig, Double ratio) {
        List<String> describe() {
            return List.of("amount=" + amount, "happened_at=" + happenedAt, "day=" + day, "duration=" + duration, "label=" + label,
                    "payload=" + (payload == null ? null : HexFormat.of().formatHex(payload)), "big=" + big, "ubig=" + ubig,
                    "ratio=" + ratio);
        }
    }

    private void types(Connection conn) throws SQLException {
        List<Probe> probes = List.of(
                new Probe(1, new BigDecimal("-12345678901234.567891"), LocalDateTime.of(2024, 2, 29, 23, 59, 59, 123_456_000),
                        LocalDate.of(1999, 12, 31), LocalTime.of(13, 45, 7, 250_000_000), "Grüße, 世界 🚀 'quote' \\ back\"slash",
                        PAYLOAD, Long.MIN_VALUE, "18446744073709551615", 0.1 + 0.2),
                new Probe(2, null, null, null, null, null, null, null, null, null),
                new Probe(3, new BigDecimal("0.000001"), LocalDateTime.of(9999, 12, 31, 23, 59, 59, 999_999_000),
                        LocalDate.of(2000, 2, 29), LocalTime.of(0, 0, 0, 1_000_000), "", new byte[0], Long.MAX_VALUE, "0", -1.5e300));
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO type_probe VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            for (Probe p : probes) {
                ps.setInt(1, p.id);
                ps.setBigDecimal(2, p.amount);
                if (p.happenedAt == null) {
                    ps.setNull(3, Types.TIMESTAMP);
                    ps.setNull(4, Types.DATE);
                    ps.setNull(5, Types.TIME);
                } else {
                    ps.setObject(3, p.happenedAt);
                    ps.setObject(4, p.day);
                    ps.setObject(5, p.duration);
                }
                ps.setString(6, p.label);
                ps.setBytes(7, p.payload);
                if (p.big == null) {
                    ps.setNull(8, Types.BIGINT);
                    ps.setNull(9, Types.DECIMAL);
                    ps.setNull(10, Types.DOUBLE);
                } else {
                    ps.setLong(8, p.big);
                    ps.setBigDecimal(9, new BigDecimal(p.ubig));
                    ps.setDouble(10, p.ratio);
                }
                ps.executeUpdate();
            }
        }
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT id, amount, happened_at, day, duration, label, payload, big, ubig, ratio FROM type_probe WHERE id = ?")) {
            for (Probe p : probes) {
                ps.setInt(1, p.id);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        report.fail("type_probe row " + p.id + " read back", "no row");
                        continue;
                    }
                    Probe got = new Probe(rs.getInt(1), rs.getBigDecimal(2), rs.getObject(3, LocalDateTime.class),
                            rs.getObject(4, LocalDate.class), rs.getObject(5, LocalTime.class), rs.getString(6), rs.getBytes(7),
                            nullable(rs, rs.getLong(8)), rs.getString(9), nullable(rs, rs.getDouble(10)));
                    report.eq("type_probe row " + p.id + " read back (DECIMAL, DATETIME(6), DATE, TIME(3), VARCHAR, BLOB, BIGINT, "
                            + "BIGINT UNSIGNED, DOUBLE)", stored(p).describe(), got.describe());
                    if (p.id == 1) {
                        ResultSetMetaData md = rs.getMetaData();
                        List<String> typeNames = new ArrayList<>();
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            typeNames.add(md.getColumnTypeName(i));
                        }
                        // Each driver's own name for INT.
                        String intName = env.target.isConnectorJ() ? "INT" : "INTEGER";
                        report.eq("result column type names", List.of(intName, "DECIMAL", "DATETIME", "DATE", "TIME", "VARCHAR", "BLOB",
                                "BIGINT", "BIGINT UNSIGNED", "DOUBLE"), typeNames);
                        report.eq("result DECIMAL(20,6) precision and scale", "20 6", md.getPrecision(2) + " " + md.getScale(2));
                        // Connector/J gives a scale for DECIMAL only; MariaDB Connector/J passes on the
                        // column's decimals, the fractional digits of DATETIME(6) and TIME(3).
                        report.eq("result DATETIME(6) and TIME(3) scale", env.target.isConnectorJ() ? "0 0" : "6 3",
                                md.getScale(3) + " " + md.getScale(5));
                        report.eq("result nullability (id NOT NULL, amount NULL)", ResultSetMetaData.columnNoNulls + " "
                                + ResultSetMetaData.columnNullable, md.isNullable(1) + " " + md.isNullable(2));
                    }
                }
            }
        }
        // What the server holds, independently of how the driver decodes it.
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(
                "SELECT CAST(amount AS CHAR), CAST(happened_at AS CHAR), CAST(day AS CHAR), CAST(duration AS CHAR), HEX(label),"
                        + " HEX(payload), CAST(big AS CHAR), CAST(ubig AS CHAR), ratio = 0.30000000000000004e0 FROM type_probe WHERE id = 1")) {
            List<String> got = new ArrayList<>();
            if (rs.next()) {
                for (int i = 1; i <= 9; i++) {
                    got.add(rs.getString(i));
                }
            }
            Probe p = probes.get(0);
            HexFormat hex = HexFormat.of().withUpperCase();
            boolean fraction = env.fractionalSeconds();
            report.eq("stored values as the server shows them", List.of("-12345678901234.567891",
                    fraction ? "2024-02-29 23:59:59.123456" : "2024-02-29 23:59:59.000000",
                    "1999-12-31", fraction ? "13:45:07.250" : "13:45:07.000", hex.formatHex(p.label.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                    hex.formatHex(PAYLOAD), "-9223372036854775808", "18446744073709551615", "1"), got);
        }
    }

    /** The row as the server stores it: without fractional seconds when the driver drops them. */
    private Probe stored(Probe p) {
        if (env.fractionalSeconds() || p.happenedAt == null) {
            return p;
        }
        return new Probe(p.id, p.amount, p.happenedAt.truncatedTo(ChronoUnit.SECONDS), p.day,
                p.duration.truncatedTo(ChronoUnit.SECONDS), p.label, p.payload, p.big, p.ubig, p.ratio);
    }

    private static <T> T nullable(ResultSet rs, T value) throws SQLException {
        return rs.wasNull() ? null : value;
    }

    private void fetchInChunks(Connection conn) throws SQLException {
        String sql = "SELECT id, total FROM orders WHERE id >= ? ORDER BY id";
        List<String> all = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, 0);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    all.add(rs.getLong(1) + "=" + rs.getBigDecimal(2));
                }
            }
        }
        // Connector/J with useCursorFetch=true reads through a server-side cursor
        // (COM_STMT_EXECUTE with a cursor, then COM_STMT_FETCH of 7 rows at a time); without
        // it, Integer.MIN_VALUE streams the result row by row. MariaDB Connector/J reads 7 rows
        // at a time off the socket.
        int fetchSize = env.target.isConnectorJ() && !env.target.serverPrepare() ? Integer.MIN_VALUE : 7;
        List<String> chunked = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement(sql, ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_READ_ONLY)) {
            ps.setFetchSize(fetchSize);
            ps.setLong(1, 0);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    chunked.add(rs.getLong(1) + "=" + rs.getBigDecimal(2));
                }
            }
        }
        report.check("result read in chunks (fetch size " + fetchSize + ") is the whole result",
                all.size() == BATCH + 1 && all.equals(chunked), "whole " + all.size() + " rows, in chunks " + chunked.size() + ": " + chunked);
        report.eq("connection goes on after the chunked read", (long) BATCH + 1, count(conn, "SELECT COUNT(*) FROM orders"));
    }

    private void sqlErrors(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            report.expectError("syntax error is 1064, SQLState 42000", 1064, "42000", SQLSyntaxErrorException.class,
                    () -> st.execute("SELEC id FROM orders"));
        }
        report.expectError("unknown table is 1146, SQLState 42S02", 1146, "42S02", SQLSyntaxErrorException.class, () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT * FROM no_such_table WHERE id = ?")) {
                ps.setInt(1, 1);
                ps.executeQuery();
            }
        });
        report.expectError("unknown column is 1054, SQLState 42S22", 1054, "42S22", SQLSyntaxErrorException.class, () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT no_such_column FROM orders WHERE id = ?")) {
                ps.setInt(1, 1);
                ps.executeQuery();
            }
        });
        report.expectError("too long for VARCHAR(60) is 1406, SQLState 22001", 1406, "22001", DataTruncation.class, () -> {
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO type_probe (id, label) VALUES (?, ?)")) {
                ps.setInt(1, 99);
                ps.setString(2, "x".repeat(61));
                ps.executeUpdate();
            }
        });
        report.eq("connection goes on after the errors", 3L, count(conn, "SELECT COUNT(*) FROM type_probe"));
    }

    private void isolation(Connection conn, Connection other) throws Exception {
        // MariaDB 10.11 names the variable tx_isolation; MySQL 8 has only transaction_isolation.
        String variable = env.isMariaDb ? "@@session.tx_isolation" : "@@session.transaction_isolation";
        long customer = customerIds.get(2);
        String read = "SELECT note FROM customers WHERE id = " + customer;
        try {
            conn.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            report.eq("getTransactionIsolation after setting READ COMMITTED", Connection.TRANSACTION_READ_COMMITTED,
                    conn.getTransactionIsolation());
            report.eq("the server's isolation after setTransactionIsolation", "READ-COMMITTED", string(conn, "SELECT " + variable));
            transaction(conn, () -> {
                string(conn, read);
                update(other, "UPDATE customers SET note = 'rc' WHERE id = " + customer);
                report.eq("READ COMMITTED sees another connection's commit", "rc", string(conn, read));
            });
            conn.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            report.eq("getTransactionIsolation after setting REPEATABLE READ", Connection.TRANSACTION_REPEATABLE_READ,
                    conn.getTransactionIsolation());
            transaction(conn, () -> {
                string(conn, read);
                update(other, "UPDATE customers SET note = 'rr' WHERE id = " + customer);
                report.eq("REPEATABLE READ keeps its snapshot", "rc", string(conn, read));
            });
            report.eq("after the transaction the new value shows", "rr", string(conn, read));
        } finally {
            conn.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        }
    }

    private static void update(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.executeUpdate(sql);
        }
    }

    private static String string(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : "no row";
        }
    }

    private static long count(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static List<Long> ids(Connection conn, String sql) throws SQLException {
        List<Long> out = new ArrayList<>();
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }
}
