// Package secrets seals the secrets Harness must store and later use in
// clear, such as the API keys of admin-configured model routes (passwords and
// tokens are hashed instead, in internal/auth).
//
// Sealing is AES-256-GCM with a key held outside the database: the
// HARNESS_SECRET_KEY variable or a 0600 file in the data directory (never
// under a session workspace, where file tools work). A copy of the database
// alone — a backup, a dump, a replica, a leaked file — then reveals no key;
// it takes the database and the key.
//
// Every sealed value is bound to a context string (for a route's key,
// "provider:<name>") as GCM additional data. The context is not secret; it
// ties the ciphertext to the row it belongs to, so a value copied to another
// row by someone who can write the database (to make one route send another
// route's key to a server they control) fails to open instead of being used.
//
// Sealed values are text, "enc:v1:" followed by base64url(nonce|ciphertext),
// so they fit the existing string columns and a future key or algorithm
// gets a new version prefix. Opening a value with the wrong key, with the
// wrong context, or after any change fails with ErrCannotOpen; it never
// yields garbage.
package secrets
