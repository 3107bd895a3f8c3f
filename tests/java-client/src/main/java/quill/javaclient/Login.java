package quill.javaclient;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Logs in to a running Quill through one JDBC driver as one account, without TLS, and prints
 * who it is and the TLS cipher (empty). tests/test_caching_sha2.py runs it when the server has
 * no cached secret for the account, so the driver must fetch the server's RSA public key
 * ({@code allowPublicKeyRetrieval=true}) and send its password encrypted: caching_sha2_password's
 * full authentication.
 *
 * <p>Usage: {@code QUILL_PORT=3306 QUILL_USER=app QUILL_PASSWORD=pw java quill.javaclient.Login
 * mysql|mariadb}. Prints {@code CURRENT_USER() Ssl_cipher}; exits 1 with the driver's error.
 */
public final class Login {
    private Login() {}

    public static void main(String[] args) {
        String port = System.getenv("QUILL_PORT");
        String url = "mariadb".equals(args[0])
                ? "jdbc:mariadb://127.0.0.1:" + port + "/?allowPublicKeyRetrieval=true"
                : "jdbc:mysql://127.0.0.1:" + port + "/?sslMode=DISABLED&allowPublicKeyRetrieval=true";
        try (Connection conn = DriverManager.getConnection(url, System.getenv("QUILL_USER"), System.getenv("QUILL_PASSWORD"));
                Statement st = conn.createStatement()) {
            String user;
            try (ResultSet rs = st.executeQuery("SELECT CURRENT_USER()")) {
                rs.next();
                user = rs.getString(1);
            }
            try (ResultSet rs = st.executeQuery("SHOW SESSION STATUS LIKE 'Ssl_cipher'")) {
                rs.next();
                System.out.println(user + " " + rs.getString(2));
            }
        } catch (SQLException e) {
            System.err.println(e.getErrorCode() + " " + e.getMessage());
            System.exit(1);
        }
    }
}
