// Node's mysql2 logs in to a running Quill as one account, without TLS, and prints who it is
// and the TLS cipher (empty): tests/test_caching_sha2.py runs it when the server has no cached
// secret for the account, so the driver must fetch the server's RSA public key and send its
// password encrypted (caching_sha2_password's full authentication).
//
// Usage: QUILL_PORT=3306 QUILL_USER=app QUILL_PASSWORD=pw node login.js. Prints
// `CURRENT_USER() Ssl_cipher` on one line; exits non-zero with the driver's error.
'use strict';

const mysql = require('mysql2/promise');

async function main() {
  const conn = await mysql.createConnection({
    host: '127.0.0.1',
    port: Number(process.env.QUILL_PORT),
    user: process.env.QUILL_USER,
    password: process.env.QUILL_PASSWORD,
  });
  const [[who]] = await conn.query('SELECT CURRENT_USER() AS user');
  const [[status]] = await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
  console.log(`${who.user} ${status.Value}`);
  await conn.end();
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
