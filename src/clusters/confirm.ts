// The interactive "apply this change?" question. Only asked on a TTY (the
// caller requires --yes otherwise), and anything but y/yes, including
// end-of-input, means no: a change to production traffic is opt-in.
import { createInterface } from 'node:readline';

export async function confirm(question: string, input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Promise<boolean> {
  const rl = createInterface({ input, output, terminal: false });
  try {
    const answer = await new Promise<string | null>((resolve) => {
      rl.once('close', () => resolve(null));
      rl.question(question, resolve);
    });
    return answer !== null && /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
