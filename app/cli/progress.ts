/** One-line progress on stderr for long CLI work (rebuild, replay, migrations, benchmarks). */
export const progressBar = (label: string) => {
  const tty = process.stderr.isTTY;
  let last = 0;
  return {
    update(done: number, total: number) {
      const now = Date.now();
      if (now - last < 200 && done < total) return;
      last = now;
      const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
      const line = `[${label}] ${done.toLocaleString('en')}/${total.toLocaleString('en')} (${pct}%)`;
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    },
    done(message: string) {
      process.stderr.write(`${tty ? '\r' : ''}[${label}] ${message}\n`);
    },
  };
};
