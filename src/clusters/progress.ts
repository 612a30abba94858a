// Progress of `--wait` on stderr: a spinner redrawn in place on a TTY, and
// otherwise one line per change of status (logs and CI stay readable).
export interface Progress {
  update(status: string): void;
  done(message: string): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 100;

export function createProgress(out: NodeJS.WritableStream & { isTTY?: boolean }): Progress {
  return out.isTTY ? spinner(out) : lines(out);
}

function lines(out: NodeJS.WritableStream): Progress {
  let last = '';
  return {
    update(status) {
      if (status !== last) out.write(`${status}\n`);
      last = status;
    },
    done(message) {
      out.write(`${message}\n`);
    },
  };
}

function spinner(out: NodeJS.WritableStream): Progress {
  let frame = 0;
  let status = '';
  const draw = () => out.write(`\r\x1b[K${FRAMES[frame++ % FRAMES.length]} ${status}`);
  let timer: NodeJS.Timeout | null = null;
  return {
    update(s) {
      status = s;
      // The timer only animates; it must not keep a finished CLI alive.
      timer ??= setInterval(draw, FRAME_MS).unref();
      draw();
    },
    done(message) {
      if (timer) clearInterval(timer);
      timer = null;
      out.write(`\r\x1b[K${message}\n`);
    },
  };
}
