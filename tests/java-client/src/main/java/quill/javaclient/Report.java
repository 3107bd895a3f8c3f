package quill.javaclient;

import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/** Counts checks and prints one line for each: {@code ok [scope] what} or {@code FAIL [scope] what: why}. */
final class Report {

    /** A piece of a check that talks to the server. */
    interface Body {
        void run() throws Exception;
    }

    private int passed;
    private int failed;
    private String scope = "";

    void scope(String scope) {
        this.scope = scope;
    }

    int passed() {
        return passed;
    }

    int failed() {
        return failed;
    }

    void pass(String what) {
        passed++;
        System.out.println("ok   [" + scope + "] " + what);
    }

    void fail(String what, String why) {
        failed++;
        System.out.println("FAIL [" + scope + "] " + what + ": " + why);
    }

    boolean check(String what, boolean ok, String whyNot) {
        if (ok) {
            pass(what);
        } else {
            fail(what, whyNot);
        }
        return ok;
    }

    boolean eq(String what, Object expected, Object actual) {
        if (expected instanceof List<?> want && actual instanceof List<?> got && want.size() == got.size()) {
            // Lists of the same length: name only the elements that differ.
            StringBuilder why = new StringBuilder();
            for (int i = 0; i < want.size(); i++) {
                if (!Objects.equals(want.get(i), got.get(i))) {
                    why.append(why.length() == 0 ? "" : "; ").append("[").append(i).append("] expected ")
                            .append(show(want.get(i))).append(", got ").append(show(got.get(i)));
                }
            }
            return check(what, why.length() == 0, why.toString());
        }
        return check(what, Objects.equals(expected, actual), "expected " + show(expected) + ", got " + show(actual));
    }

    /**
     * Runs a group of checks; an exception it throws (an unexpected SQL error, say) is one failed
     * check named after the group, and the rest of the group is skipped.
     */
    void step(String what, Body body) {
        try {
            body.run();
        } catch (Exception e) {
            fail(what, "unexpected " + describe(e));
        }
    }

    /** A statement that must fail with this MySQL error code and SQLState. */
    void expectError(String what, int code, String sqlState, Class<? extends SQLException> kind, Body body) {
        try {
            body.run();
            fail(what, "no error; expected " + code + " (" + sqlState + ")");
        } catch (SQLException e) {
            boolean ok = e.getErrorCode() == code && sqlState.equals(e.getSQLState()) && kind.isInstance(e);
            check(what, ok, "expected " + code + " (" + sqlState + ", " + kind.getSimpleName() + "), got " + describe(e));
        } catch (Exception e) {
            fail(what, "expected " + code + " (" + sqlState + "), got " + describe(e));
        }
    }

    static String describe(Throwable e) {
        if (e instanceof SQLException sql) {
            return sql.getClass().getSimpleName() + " " + sql.getErrorCode() + " (" + sql.getSQLState() + "): " + sql.getMessage();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    static String show(Object value) {
        if (value == null) {
            return "NULL";
        }
        if (value instanceof String s) {
            return "\"" + s + "\"";
        }
        if (value instanceof byte[] b) {
            return b.length + " bytes";
        }
        if (value instanceof List<?> list) {
            return list.stream().map(Report::show).toList().toString();
        }
        return value + " (" + value.getClass().getSimpleName() + ")";
    }
}
