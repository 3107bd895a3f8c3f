package quill.javaclient;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * DatabaseMetaData as GUI tools (DBeaver, IntelliJ) and ORMs (Hibernate's schema validation,
 * jOOQ's code generator) use it, on the schema of {@link Schema}: the answers are checked, not
 * only that the calls return. Connector/J answers from SHOW statements by default and from
 * INFORMATION_SCHEMA with useInformationSchema=true; MariaDB Connector/J answers from
 * INFORMATION_SCHEMA, and parses SHOW CREATE TABLE for getImportedKeys.
 */
final class MetadataChecks {

    private final Main.Env env;
    private final Report report;

    MetadataChecks(Main.Env env, Report report) {
        this.env = env;
        this.report = report;
    }

    void run() {
        try (Connection conn = env.connect()) {
            DatabaseMetaData md = conn.getMetaData();
            report.step("product name and version", () -> product(conn, md));
            report.step("getCatalogs", () -> catalogs(md));
            report.step("getTables", () -> tables(md));
            report.step("getColumns", () -> columns(md));
            report.step("getPrimaryKeys", () -> primaryKeys(md));
            report.step("getIndexInfo", () -> indexes(md));
            report.step("getImportedKeys / getExportedKeys", () -> foreignKeys(md));
        } catch (SQLException e) {
            report.fail("connect for DatabaseMetaData", Report.describe(e));
        }
    }

    private void product(Connection conn, DatabaseMetaData md) throws SQLException {
        String version;
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT VERSION()")) {
            rs.next();
            version = rs.getString(1);
        }
        // Connector/J always says "MySQL"; MariaDB Connector/J says "MariaDB" only when the
        // server's version string says it is MariaDB.
        String expectedName = env.isMariaDb && !env.target.isConnectorJ() ? "MariaDB" : "MySQL";
        report.eq("getDatabaseProductName", expectedName, md.getDatabaseProductName());

        // The product version is the version the server announced in its handshake, which must
        // be what VERSION() returns. MariaDB announces "5.5.5-" + VERSION() (for clients older
        // than its version 10 numbering); Connector/J reports that string as it is, MariaDB
        // Connector/J strips the prefix.
        String productVersion = md.getDatabaseProductVersion();
        boolean sameVersion = productVersion.equals(version)
                || env.isMariaDb && env.target.isConnectorJ() && productVersion.equals("5.5.5-" + version);
        report.check("getDatabaseProductVersion is the server's VERSION()", sameVersion,
                "product version \"" + productVersion + "\", VERSION() \"" + version + "\"");

        int[] numbers = leadingVersion(productVersion);
        report.check("getDatabaseMajorVersion/MinorVersion match the product version",
                md.getDatabaseMajorVersion() == numbers[0] && md.getDatabaseMinorVersion() == numbers[1],
                md.getDatabaseMajorVersion() + "." + md.getDatabaseMinorVersion() + " for \"" + productVersion + "\"");
        if (env.isMariaDb) {
            report.check("server version is MariaDB 10 or later", leadingVersion(version)[0] >= 10, version);
        } else {
            // The drivers switch MySQL 8 behaviour on from the announced version (for instance
            // Connector/J reads @@transaction_isolation rather than @@tx_isolation).
            report.check("server version is MySQL 8", version.matches("8\\.\\d+\\.\\d+.*"), version);
        }
        report.eq("getIdentifierQuoteString", "`", md.getIdentifierQuoteString());
    }

    private static int[] leadingVersion(String version) {
        String[] parts = version.split("[^0-9]+", 4);
        return new int[] {Integer.parseInt(parts[0]), parts.length > 1 ? Integer.parseInt(parts[1]) : -1};
    }

    private void catalogs(DatabaseMetaData md) throws SQLException {
        List<String> names = new ArrayList<>();
        try (ResultSet rs = md.getCatalogs()) {
            while (rs.next()) {
                names.add(rs.getString("TABLE_CAT"));
            }
        }
        report.check("getCatalogs lists the database", names.contains(env.database), "got " + names);
    }

    private void tables(DatabaseMetaData md) throws SQLException {
        List<String> tables = new ArrayList<>();
        List<String> odd = new ArrayList<>();
        try (ResultSet rs = md.getTables(env.database, null, "%", new String[] {"TABLE"})) {
            while (rs.next()) {
                tables.add(rs.getString("TABLE_NAME"));
                if (!env.database.equals(rs.getString("TABLE_CAT")) || !"TABLE".equals(rs.getString("TABLE_TYPE"))) {
                    odd.add(rs.getString("TABLE_NAME") + " cat=" + rs.getString("TABLE_CAT") + " type=" + rs.getString("TABLE_TYPE"));
                }
            }
        }
        // Sorted here: the drivers that ask INFORMATION_SCHEMA leave the order of "orders" and
        // "order_items" to the collation of its TABLE_NAME column, which servers choose differently.
        tables.sort(null);
        report.eq("getTables(TABLE) names", List.of("customers", "order_items", "orders", "type_probe"), tables);
        report.check("getTables(TABLE) TABLE_CAT and TABLE_TYPE", odd.isEmpty(), "rows " + odd);

        List<String> views = new ArrayList<>();
        try (ResultSet rs = md.getTables(env.database, null, "%", new String[] {"VIEW"})) {
            while (rs.next()) {
                views.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
            }
        }
        report.eq("getTables(VIEW)", List.of("customer_spend:VIEW"), views);

        List<String> one = new ArrayList<>();
        try (ResultSet rs = md.getTables(env.database, null, "orders", null)) {
            while (rs.next()) {
                one.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
                if (env.target.infoSchemaMetadata()) {
                    // Connector/J's SHOW FULL TABLES path has no table comments to give.
                    report.eq("getTables REMARKS is the table comment", "customer orders", rs.getString("REMARKS"));
                }
            }
        }
        report.eq("getTables(\"orders\", any type)", List.of("orders:TABLE"), one);
    }

    /** One column as getColumns describes it; digits and remarks are only checked when not null. */
    private record Col(String name, int dataType, String typeName, int size, Integer digits, boolean nullable,
                       String def, boolean autoIncrement, String remarks) {
        String describe(int position) {
            return "pos=" + position + " type=" + dataType + "/" + typeName + " size=" + size
                    + (digits == null ? "" : " digits=" + digits) + " nullable=" + nullable
                    + " default=" + (def == null ? "NULL" : "'" + def + "'") + " autoinc=" + autoIncrement
                    + (remarks == null ? "" : " remarks='" + remarks + "'");
        }
    }

    private void columns(DatabaseMetaData md) throws SQLException {
        boolean cj = env.target.isConnectorJ();
        // DATETIME(6) is 19 + 1 + 6 characters, TIME(3) 8 + 1 + 3 (Connector/J) or 11 + 3
        // (MariaDB Connector/J, room for a sign and three hour digits); both drivers compute it
        // from the column type or from INFORMATION_SCHEMA.COLUMNS.DATETIME_PRECISION. Connector/J
        // reading INFORMATION_SCHEMA ignores the precision on a server older than MySQL 5.6.4,
        // which it takes MariaDB for (see Main.Env.fractionalSeconds).
        boolean precision = env.fractionalSeconds() || !env.target.infoSchemaMetadata();
        int datetime6 = precision ? 26 : 19;
        int time3 = !precision ? 8 : cj ? 12 : 14;
        Map<String, List<Col>> expected = new TreeMap<>();
        expected.put("customers", List.of(
                new Col("id", Types.BIGINT, "BIGINT", 19, null, false, null, true, null),
                new Col("email", Types.VARCHAR, "VARCHAR", 120, null, false, null, false, null),
                new Col("name", Types.VARCHAR, "VARCHAR", 100, null, false, null, false, null),
                new Col("credit_limit", Types.DECIMAL, "DECIMAL", 12, 2, false, "500.00", false, null),
                new Col("created_at", Types.TIMESTAMP, "DATETIME", datetime6, null, false, "CURRENT_TIMESTAMP(6)", false, null),
                new Col("note", Types.LONGVARCHAR, "TEXT", 65535, null, true, null, false, null)));
        expected.put("orders", List.of(
                new Col("id", Types.BIGINT, "BIGINT", 19, null, false, null, true, null),
                new Col("customer_id", Types.BIGINT, "BIGINT", 19, null, false, null, false, null),
                new Col("status", Types.VARCHAR, "VARCHAR", 16, null, false, "new", false, null),
                new Col("total", Types.DECIMAL, "DECIMAL", 12, 2, false, "0.00", false, "order total in EUR"),
                new Col("placed_on", Types.DATE, "DATE", 10, null, true, null, false, null),
                new Col("placed_at", Types.TIMESTAMP, "DATETIME", 19, null, true, null, false, null)));
        expected.put("order_items", List.of(
                new Col("order_id", Types.BIGINT, "BIGINT", 19, null, false, null, false, null),
                new Col("line_no", Types.INTEGER, "INT", 10, null, false, null, false, null),
                new Col("sku", Types.CHAR, "CHAR", 8, null, false, null, false, null),
                new Col("qty", Types.SMALLINT, "SMALLINT UNSIGNED", 5, null, false, "1", false, null),
                new Col("unit_price", Types.DECIMAL, "DECIMAL", 10, 2, false, null, false, null)));
        expected.put("type_probe", List.of(
                new Col("id", Types.INTEGER, "INT", 10, null, false, null, false, null),
                new Col("amount", Types.DECIMAL, "DECIMAL", 20, 6, true, null, false, null),
                new Col("happened_at", Types.TIMESTAMP, "DATETIME", datetime6, null, true, null, false, null),
                new Col("day", Types.DATE, "DATE", 10, null, true, null, false, null),
                new Col("duration", Types.TIME, "TIME", time3, null, true, null, false, null),
                new Col("label", Types.VARCHAR, "VARCHAR", 60, null, true, null, false, null),
                new Col("payload", Types.LONGVARBINARY, "BLOB", 65535, null, true, null, false, null),
                new Col("big", Types.BIGINT, "BIGINT", 19, null, true, null, false, null),
                new Col("ubig", Types.BIGINT, "BIGINT UNSIGNED", 20, null, true, null, false, null),
                new Col("ratio", Types.DOUBLE, "DOUBLE", 22, null, true, null, false, null)));

        for (Map.Entry<String, List<Col>> table : expected.entrySet()) {
            Map<String, String> got = new TreeMap<>();
            List<String> order = new ArrayList<>();
            try (ResultSet rs = md.getColumns(env.database, null, table.getKey(), "%")) {
                while (rs.next()) {
                    String name = rs.getString("COLUMN_NAME");
                    Col want = table.getValue().stream().filter(c -> c.name.equals(name)).findFirst().orElse(null);
                    int digits = rs.getInt("DECIMAL_DIGITS");
                    Integer digitsOrNull = rs.wasNull() ? null : digits;
                    Col col = new Col(name, rs.getInt("DATA_TYPE"), rs.getString("TYPE_NAME"), rs.getInt("COLUMN_SIZE"),
                            want != null && want.digits != null ? digitsOrNull : null,
                            rs.getInt("NULLABLE") == DatabaseMetaData.columnNullable && "YES".equals(rs.getString("IS_NULLABLE")),
                            normaliseDefault(rs.getString("COLUMN_DEF")), "YES".equals(rs.getString("IS_AUTOINCREMENT")),
                            want != null && want.remarks != null ? rs.getString("REMARKS") : null);
                    got.put(name, col.describe(rs.getInt("ORDINAL_POSITION")));
                    order.add(name);
                }
            }
            List<String> expectedOrder = table.getValue().stream().map(Col::name).toList();
            report.eq("getColumns " + table.getKey() + " column order", expectedOrder, order);
            for (int i = 0; i < table.getValue().size(); i++) {
                Col want = table.getValue().get(i);
                report.eq("getColumns " + table.getKey() + "." + want.name, want.describe(i + 1), got.get(want.name));
            }
        }
    }

    /**
     * MariaDB's INFORMATION_SCHEMA.COLUMNS.COLUMN_DEFAULT quotes string defaults ('new'), gives
     * the text NULL for "no default" and writes current_timestamp(6) in lower case, where MySQL 8
     * gives new, SQL NULL and CURRENT_TIMESTAMP(6); against MariaDB its answer is brought to
     * MySQL 8's form, against any other server it must be MySQL 8's as it is.
     */
    private String normaliseDefault(String def) {
        if (!env.isMariaDb || def == null) {
            return def;
        }
        if (def.equals("NULL")) {
            return null;
        }
        if (def.length() >= 2 && def.startsWith("'") && def.endsWith("'")) {
            return def.substring(1, def.length() - 1);
        }
        return def.startsWith("current_timestamp") ? def.toUpperCase(Locale.ROOT) : def;
    }

    private void primaryKeys(DatabaseMetaData md) throws SQLException {
        report.eq("getPrimaryKeys customers", "PRIMARY{1=id}", primaryKey(md, "customers"));
        report.eq("getPrimaryKeys order_items (two columns)", "PRIMARY{1=order_id, 2=line_no}", primaryKey(md, "order_items"));
    }

    private String primaryKey(DatabaseMetaData md, String table) throws SQLException {
        Map<Integer, String> columns = new TreeMap<>();
        String name = null;
        try (ResultSet rs = md.getPrimaryKeys(env.database, null, table)) {
            while (rs.next()) {
                columns.put(rs.getInt("KEY_SEQ"), rs.getString("COLUMN_NAME"));
                name = rs.getString("PK_NAME");
                if (!table.equals(rs.getString("TABLE_NAME"))) {
                    return "row for table " + rs.getString("TABLE_NAME");
                }
            }
        }
        return name + columns;
    }

    private void indexes(DatabaseMetaData md) throws SQLException {
        // InnoDB gives a foreign key without a usable index one of its own, named after the
        // constraint: orders.customer_id has fk_orders_customer. order_items.order_id is the
        // first column of the primary key, so it gets none.
        report.eq("getIndexInfo orders",
                "{fk_orders_customer=non-unique(customer_id), "
                        + "idx_orders_status_placed=non-unique(status,placed_on), PRIMARY=unique(id)}",
                indexInfo(md, "orders", false));
        report.eq("getIndexInfo customers, unique only",
                "{PRIMARY=unique(id), uq_customers_email=unique(email)}", indexInfo(md, "customers", true));
        report.eq("getIndexInfo order_items", "{PRIMARY=unique(order_id,line_no)}", indexInfo(md, "order_items", false));
    }

    private String indexInfo(DatabaseMetaData md, String table, boolean uniqueOnly) throws SQLException {
        Map<String, Boolean> nonUnique = new TreeMap<>();
        Map<String, Map<Integer, String>> columns = new TreeMap<>();
        try (ResultSet rs = md.getIndexInfo(env.database, null, table, uniqueOnly, false)) {
            while (rs.next()) {
                if (rs.getShort("TYPE") == DatabaseMetaData.tableIndexStatistic) {
                    continue;
                }
                String index = rs.getString("INDEX_NAME");
                nonUnique.put(index, rs.getBoolean("NON_UNIQUE"));
                columns.computeIfAbsent(index, k -> new TreeMap<>())
                        .put(rs.getInt("ORDINAL_POSITION"), rs.getString("COLUMN_NAME"));
            }
        }
        Map<String, String> out = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (String index : nonUnique.keySet()) {
            out.put(index, (nonUnique.get(index) ? "non-unique(" : "unique(") + String.join(",", columns.get(index).values()) + ")");
        }
        return out.toString();
    }

    private void foreignKeys(DatabaseMetaData md) throws SQLException {
        String db = env.database;
        String ordersFk = db + ".customers.id <- " + db + ".orders.customer_id seq=1 name=fk_orders_customer"
                + " update=" + DatabaseMetaData.importedKeyCascade + " delete=" + DatabaseMetaData.importedKeyRestrict;
        String itemsFk = db + ".orders.id <- " + db + ".order_items.order_id seq=1 name=fk_items_order"
                + " update=" + DatabaseMetaData.importedKeyRestrict + " delete=" + DatabaseMetaData.importedKeyCascade;
        // Connector/J's INFORMATION_SCHEMA query for exported keys and cross references joins
        // every PRIMARY KEY and UNIQUE constraint of the parent table, so it gives a foreign key
        // to customers (which also has uq_customers_email) once per such constraint, whatever the
        // server; those copies are counted once.
        boolean dedupe = env.target.isConnectorJ() && env.target.infoSchemaMetadata();
        report.eq("getImportedKeys orders", List.of(ordersFk), keys(md.getImportedKeys(db, null, "orders")));
        report.eq("getImportedKeys order_items", List.of(itemsFk), keys(md.getImportedKeys(db, null, "order_items")));
        report.eq("getImportedKeys customers (none)", List.of(), keys(md.getImportedKeys(db, null, "customers")));
        report.eq("getExportedKeys customers", List.of(ordersFk), distinct(keys(md.getExportedKeys(db, null, "customers")), dedupe));
        report.eq("getExportedKeys orders", List.of(itemsFk), keys(md.getExportedKeys(db, null, "orders")));
        report.eq("getCrossReference customers -> orders", List.of(ordersFk),
                distinct(keys(md.getCrossReference(db, null, "customers", db, null, "orders")), dedupe));
    }

    private static List<String> distinct(List<String> rows, boolean dedupe) {
        return dedupe ? rows.stream().distinct().toList() : rows;
    }

    private static List<String> keys(ResultSet rs) throws SQLException {
        List<String> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                out.add(rs.getString("PKTABLE_CAT") + "." + rs.getString("PKTABLE_NAME") + "." + rs.getString("PKCOLUMN_NAME")
                        + " <- " + rs.getString("FKTABLE_CAT") + "." + rs.getString("FKTABLE_NAME") + "." + rs.getString("FKCOLUMN_NAME")
                        + " seq=" + rs.getInt("KEY_SEQ") + " name=" + rs.getString("FK_NAME")
                        + " update=" + rs.getInt("UPDATE_RULE") + " delete=" + rs.getInt("DELETE_RULE"));
            }
        }
        return out;
    }
}
