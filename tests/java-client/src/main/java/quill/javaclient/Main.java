package quill.javaclient;

import java.sql.Connection;
import java.sql.Driver;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Properties;

/**
 * Drives a running server with the two Java drivers the way Java applications, GUI tools and
 * ORMs do: MySQL Connector/J and MariaDB Connector/J, each with client-side prepared statements
 * (values escaped into the statement text) and with server-side ones (binary protocol). For every
 * one of the four set-ups it creates a database of its own, checks what DatabaseMetaData says
 * about a small orders schema ({@link MetadataChecks}), then runs a small orders application
 * against it ({@link OrdersProgram}), and drops the database.
 *
 * <p>Usage: {@code QUILL_PORT=3306 java -cp 'target/classes:target/lib/*' quill.javaclient.Main}
 * (host {@code QUILL_HOST}, default 127.0.0.1; user root, empty password). Prints one line per
 * check and {@code java-client: N passed, M failed} last; the exit code is 1 if any check failed.
 */
public final class Main {

    /** One driver with one set of connection options. */
    record Target(String label, String tag, Driver driver, String urlPrefix, String options) {

        boolean isConnectorJ() {
            return driver instanceof com.mysql.cj.jdbc.Driver;
        }

        /** Server-side prepared statements (binary protocol) rather than values escaped into the SQL text. */
        boolean serverPrepare() {
            return options.contains("useServerPrepStmts=true");
        }

        /**
         * DatabaseMetaData reads INFORMATION_SCHEMA: always with MariaDB Connector/J, and with
         * Connector/J when useInformationSchema=true (it uses SHOW statements otherwise).
         */
        boolean infoSchemaMetadata() {
            return !isConnectorJ() || options.contains("useInformationSchema=true");
        }

        Connection connect(String host, String port, String database) throws SQLException {
            Properties props = new Properties();
            props.setProperty("user", "root");
            props.setProperty("password", "");
            String url = urlPrefix + host + ":" + port + "/" + database + "?" + options;
            Connection conn = driver.connect(url, props);
            if (conn == null) {
                throw new SQLException("driver refused URL " + url);
            }
            return conn;
        }
    }

    public static void main(String[] args) throws SQLException {
        String host = System.getenv().getOrDefault("QUILL_HOST", "127.0.0.1");
        String port = System.getenv().getOrDefault("QUILL_PORT", "3306");
        // A socket timeout on every connection, so that a reply that never comes is a failed
        // check rather than a hung test.
        String common = "connectTimeout=10000&socketTimeout=60000";
        List<Target> targets = List.of(
                // Connector/J reads metadata from INFORMATION_SCHEMA on MySQL 8.0.3 and later unless
                // told otherwise; useInformationSchema=false keeps its SHOW statements in play too.
                new Target("connector-j text", "cjt", new com.mysql.cj.jdbc.Driver(), "jdbc:mysql://",
                        common + "&rewriteBatchedStatements=true&useInformationSchema=false"),
                new Target("connector-j binary", "cjb", new com.mysql.cj.jdbc.Driver(), "jdbc:mysql://",
                        common + "&useServerPrepStmts=true&cachePrepStmts=true&rewriteBatchedStatements=true"
                                + "&useInformationSchema=true&useCursorFetch=true"),
                new Target("mariadb-j text", "mjt", new org.mariadb.jdbc.Driver(), "jdbc:mariadb://", common),
                new Target("mariadb-j binary", "mjb", new org.mariadb.jdbc.Driver(), "jdbc:mariadb://",
                        common + "&useServerPrepStmts=true&cachePrepStmts=true"));

        Report report = new Report();
        for (Target target : targets) {
            report.scope(target.label());
            String database = "java_client_" + target.tag() + "_" + ProcessHandle.current().pid();
            Env env;
            try {
                env = Env.open(target, host, port, database);
            } catch (SQLException e) {
                report.fail("connect and create database " + database, Report.describe(e));
                continue;
            }
            try {
                Schema.create(env, report);
                new MetadataChecks(env, report).run();
                new OrdersProgram(env, report).run();
            } finally {
                env.close(report);
            }
        }
        System.out.println("java-client: " + report.passed() + " passed, " + report.failed() + " failed");
        System.exit(report.failed() == 0 ? 0 : 1);
    }

    /** What the checks of one target share: its driver, its database, and what the server is. */
    static final class Env {
        final Target target;
        final String host;
        final String port;
        final String database;
        /** The server's VERSION(). */
        final String serverVersion;
        /**
         * MariaDB answers some things differently from MySQL 8 (its version string, quoting in
         * INFORMATION_SCHEMA.COLUMNS.COLUMN_DEFAULT, tx_isolation); checks take its answer only
         * when the server says it is MariaDB, and MySQL 8's everywhere else.
         */
        final boolean isMariaDb;

        private Env(Target target, String host, String port, String database, String serverVersion) {
            this.target = target;
            this.host = host;
            this.port = port;
            this.database = database;
            this.serverVersion = serverVersion;
            this.isMariaDb = serverVersion.contains("MariaDB");
        }

        static Env open(Target target, String host, String port, String database) throws SQLException {
            try (Connection admin = target.connect(host, port, "");
                 Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS `" + database + "`");
                st.execute("CREATE DATABASE `" + database + "` DEFAULT CHARACTER SET utf8mb4");
                try (ResultSet rs = st.executeQuery("SELECT VERSION()")) {
                    rs.next();
                    return new Env(target, host, port, database, rs.getString(1));
                }
            }
        }

        /**
         * Whether the driver sends and reads fractional seconds. MariaDB announces its version as
         * "5.5.5-10.11..." in the handshake; Connector/J takes that for MySQL 5.5.5, older than
         * fractional seconds (5.6.4), and drops the fraction of every temporal value it sends.
         */
        boolean fractionalSeconds() {
            return !(isMariaDb && target.isConnectorJ());
        }

        Connection connect() throws SQLException {
            return target.connect(host, port, database);
        }

        void close(Report report) {
            try (Connection admin = target.connect(host, port, "");
                 Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE `" + database + "`");
            } catch (SQLException e) {
                report.fail("drop database " + database, Report.describe(e));
            }
        }
    }
}
