// api.base_url: embedded runs the emulator in-process on a free loopback
// port, storing rows under <state_dir>/embedded-emulator/<datasource>.ndjson,
// so a new user sees the whole pipeline work with no account.
import { randomUUID } from 'node:crypto';
import path from 'node:path';

export interface EmbeddedEmulator {
  url: string;
  token: string;
  close(): Promise<void>;
}

export function embeddedDataDir(stateDir: string): string {
  return path.join(stateDir, 'embedded-emulator');
}

export async function startEmbedded(stateDir: string): Promise<EmbeddedEmulator> {
  const { startEmulator } = await import('./index.js');
  const token = `embedded-${randomUUID()}`;
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: embeddedDataDir(stateDir), tokens: [token] });
  return { url: emu.url, token, close: () => emu.close() };
}
