// A hub in a few lines: ask a person to approve something, wait for the answer, and follow the
// event stream. Run with HERALD_URL and HERALD_TOKEN set (see README.md).
import { Herald } from './herald.js';

const herald = new Herald({
  baseURL: process.env.HERALD_URL ?? 'http://127.0.0.1:8686',
  token: process.env.HERALD_TOKEN ?? '',
});

async function main(): Promise<void> {
  // 1. Follow the stream in the background (from the oldest stored event, resuming on disconnects).
  const stop = new AbortController();
  const follower = (async () => {
    try {
      for await (const e of herald.events({ namespace: 'default', since: 0, signal: stop.signal })) {
        console.log(`event ${e.id} ${e.event} ${JSON.stringify(e.data)}`);
      }
    } catch (error) {
      if (!stop.signal.aborted) throw error;
    }
  })();

  // 2. Send; the id is fixed before the first attempt, so retries never notify twice.
  const id = crypto.randomUUID();
  const { report } = await herald.send({
    id,
    type: 'permission-request',
    title: 'Permission Request',
    body: 'Claude Bash: rm -rf build',
    severity: 'warning',
    actions: [
      { id: 'approve', title: 'Allow' },
      { id: 'deny', title: 'Deny', destructive: true },
    ],
  });
  console.log(`sent ${id}`);
  for (const d of report.deliveries ?? []) console.log(`delivery ${d.channel} ${d.deviceId ?? '-'} ${d.outcome}`);

  // 3. Sending the same id again is answered from the store.
  const again = await herald.send({ id, title: 'Permission Request' }, { wait: 'none' });
  console.log(`resent: replayed=${again.replayed}`);

  // 4. Wait for a person's answer (a Telegram button, an app's POST …/events): WAIT_SECONDS
  //    (default 60), then give up.
  const seconds = Number(process.env.WAIT_SECONDS ?? 60);
  const answer = await herald.waitForAction(id, seconds);
  console.log(answer ? `answer: ${answer.actionId} from ${answer.deviceId ?? 'unknown'}` : 'no answer in time');

  stop.abort();
  await follower;
}

main().catch((error) => {
  console.error(String(error));
  process.exit(1);
});
