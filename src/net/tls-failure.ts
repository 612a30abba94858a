// Why a TLS connection to the API ended, for the error undici reports in its
// place. A server that refuses the client certificate under TLS 1.3 does so
// after the client's handshake is done: its alert (certificate required,
// unknown CA) arrives with the connection's end, and undici's HTTP/1.1
// client reports the end ("UND_ERR_SOCKET: other side closed"), not the
// alert, so the operator would see no cause. The connector (dispatcher.ts)
// shows each new TLS socket to this memo, which keeps the alert, and
// explain() gives it back for the socket the failed request was on (undici's
// socket error carries that socket's local port).
//
// A server that just closes (Node's own TLS servers verify the certificate
// after the handshake and send no alert) leaves no alert: when a client
// certificate is set and nothing at all came after the handshake, the
// message says that the certificate was likely refused.
import { TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';

/** Sockets remembered at most: beyond it the oldest go (a pool opens at most max_connections at once). */
const MAX_SOCKETS = 1024;

interface Entry {
  alert: { code: string; reason: string } | null;
  /** bytesRead when the handshake was done. */
  handshakeBytes: number;
}

export class TlsFailureMemo {
  private readonly byPort = new Map<number, Entry>();

  constructor(private readonly clientCertSet: () => boolean) {}

  watch(socket: Socket): void {
    // A socket inside a proxy tunnel has no port of its own: its failures keep undici's words.
    if (!(socket instanceof TLSSocket) || socket.localPort === undefined) return;
    const port = socket.localPort;
    const entry: Entry = { alert: null, handshakeBytes: socket.bytesRead };
    this.byPort.delete(port);
    this.byPort.set(port, entry);
    if (this.byPort.size > MAX_SOCKETS) this.byPort.delete(this.byPort.keys().next().value!);
    socket.prependListener('error', (err: NodeJS.ErrnoException & { reason?: string }) => {
      if (entry.alert === null && err.code?.startsWith('ERR_SSL_')) entry.alert = { code: err.code, reason: err.reason ?? err.message };
    });
  }

  /** The TLS cause of a socket error undici reported, or null when there is none to add. */
  explain(err: unknown): { code: string; message: string } | null {
    const e = err as { code?: string; message?: string; socket?: { localPort?: number; bytesRead?: number } };
    if (e.code !== 'UND_ERR_SOCKET' || e.socket?.localPort === undefined) return null;
    const entry = this.byPort.get(e.socket.localPort);
    if (!entry) return null;
    if (entry.alert) return { code: entry.alert.code, message: `the server ended the TLS connection with an alert: ${entry.alert.reason}` };
    if (this.clientCertSet() && e.socket.bytesRead === entry.handshakeBytes) {
      return { code: e.code, message: `${e.message ?? 'closed'}: the server closed the connection right after the TLS handshake, before any answer; it likely refused the client certificate (api.client_cert_file)` };
    }
    return null;
  }
}
