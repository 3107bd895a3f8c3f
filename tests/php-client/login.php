<?php
// PHP's mysqli and PDO (both over mysqlnd) log in to a running Quill as one account, without
// TLS, and print who they are: tests/test_caching_sha2.py runs this when the server has no
// cached secret for the account, so mysqlnd must fetch the server's RSA public key and send
// the password encrypted (caching_sha2_password's full authentication). The test empties the
// server's cache between the two logins (QUILL_BETWEEN names a command that does it).
//
// Usage: QUILL_PORT=3306 QUILL_USER=app QUILL_PASSWORD=pw php login.php. Prints
// `mysqli CURRENT_USER()` and `pdo CURRENT_USER()`; exits non-zero with the driver's error.

mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
$port = (int) getenv('QUILL_PORT');
$user = getenv('QUILL_USER');
$password = getenv('QUILL_PASSWORD');

$mysqli = new mysqli('127.0.0.1', $user, $password, '', $port);
echo 'mysqli ', $mysqli->query('SELECT CURRENT_USER()')->fetch_row()[0], "\n";
$mysqli->close();

$between = getenv('QUILL_BETWEEN');
if ($between) {
    passthru($between, $status);
    if ($status !== 0) {
        exit($status);
    }
}

$pdo = new PDO("mysql:host=127.0.0.1;port=$port", $user, $password, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
echo 'pdo ', $pdo->query('SELECT CURRENT_USER()')->fetchColumn(), "\n";
