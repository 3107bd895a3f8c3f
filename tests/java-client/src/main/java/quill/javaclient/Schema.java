package quill.javaclient;

import java.sql.Connection;
import java.sql.Statement;

/** The small orders schema both the metadata checks and the orders program work on. */
final class Schema {

    static final String[] TABLES = {
        """
        CREATE TABLE customers (
          id BIGINT NOT NULL AUTO_INCREMENT,
          email VARCHAR(120) NOT NULL,
          name VARCHAR(100) NOT NULL,
          credit_limit DECIMAL(12,2) NOT NULL DEFAULT '500.00',
          created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
          note TEXT,
          PRIMARY KEY (id),
          UNIQUE KEY uq_customers_email (email)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='people who order'""",
        """
        CREATE TABLE orders (
          id BIGINT NOT NULL AUTO_INCREMENT,
          customer_id BIGINT NOT NULL,
          status VARCHAR(16) NOT NULL DEFAULT 'new',
          total DECIMAL(12,2) NOT NULL DEFAULT '0.00' COMMENT 'order total in EUR',
          placed_on DATE DEFAULT NULL,
          placed_at DATETIME DEFAULT NULL,
          PRIMARY KEY (id),
          KEY idx_orders_status_placed (status, placed_on),
          CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
            ON DELETE RESTRICT ON UPDATE CASCADE
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='customer orders'""",
        """
        CREATE TABLE order_items (
          order_id BIGINT NOT NULL,
          line_no INT NOT NULL,
          sku CHAR(8) NOT NULL,
          qty SMALLINT UNSIGNED NOT NULL DEFAULT 1,
          unit_price DECIMAL(10,2) NOT NULL,
          PRIMARY KEY (order_id, line_no),
          CONSTRAINT fk_items_order FOREIGN KEY (order_id) REFERENCES orders (id)
            ON DELETE CASCADE ON UPDATE RESTRICT
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
        """
        CREATE TABLE type_probe (
          id INT NOT NULL PRIMARY KEY,
          amount DECIMAL(20,6) NULL,
          happened_at DATETIME(6) NULL,
          day DATE NULL,
          duration TIME(3) NULL,
          label VARCHAR(60) NULL,
          payload BLOB NULL,
          big BIGINT NULL,
          ubig BIGINT UNSIGNED NULL,
          ratio DOUBLE NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    };

    static final String VIEW = """
        CREATE VIEW customer_spend AS
          SELECT c.id AS customer_id, c.email, COALESCE(SUM(o.total), 0) AS spent
          FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
          GROUP BY c.id, c.email""";

    static void create(Main.Env env, Report report) {
        report.step("create the orders schema", () -> {
            try (Connection conn = env.connect(); Statement st = conn.createStatement()) {
                for (String ddl : TABLES) {
                    st.execute(ddl);
                }
            }
            report.pass("create the orders schema (4 tables, 2 foreign keys)");
        });
        report.step("create a view", () -> {
            try (Connection conn = env.connect(); Statement st = conn.createStatement()) {
                st.execute(VIEW);
            }
            report.pass("create a view");
        });
    }
}
