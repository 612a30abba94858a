// Bounds of config values that code elsewhere needs too: one owner each.

/** The platform's Events API request limit on paid plans (uncompressed body). */
export const MAX_BATCH_BYTES = 100 * 1000 * 1000; // 100 MB
export const MIN_BATCH_BYTES = 1000; // 1 KB
/** The platform allows 250 sockets per IP address and region. */
export const MAX_CONNECTIONS = 250;
/** `max_in_flight_bytes: auto` never passes this (bodies beyond a small in-memory share wait on disk). */
export const MAX_AUTO_IN_FLIGHT_BYTES = 1024 * 1024 * 1024; // 1 GiB
/** libuv runs at most 1024 threads (UV_THREADPOOL_SIZE's ceiling). */
export const MAX_COMPRESSION_THREADS = 1024;
