// Node's web-push as a peer of RelayBell's bare sender in `relaybell bench`
// (bench/peers.go). Usage: node send.js CONFIG.json
//
// CONFIG: {"subscriptions": [{endpoint, keys: {p256dh, auth}}...],
// "payload": base64, "vapid": {subject, publicKey, privateKey},
// "ttl": seconds, "urgency", "concurrency": pushes in flight}.
//
// It loads everything and prints "ready"; then for each line "send" on stdin
// it sends every push, `concurrency` at a time over keep-alive HTTPS
// connections (web-push speaks HTTP/1.1 only), and prints {"sent", "failed",
// "error"} as one JSON line; it exits when stdin closes. The bench reads this
// process's CPU time (/proc) before each "send" and after its answer. The
// fake push service's certificate is trusted through NODE_EXTRA_CA_CERTS.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { createInterface } from 'node:readline';
import webpush from 'web-push';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const payload = Buffer.from(config.payload, 'base64');
const agent = new https.Agent({ keepAlive: true, maxSockets: config.concurrency });
const options = {
  vapidDetails: config.vapid,
  TTL: config.ttl,
  urgency: config.urgency,
  agent,
};

const subs = config.subscriptions;

// sendAll sends every push, config.concurrency at a time.
async function sendAll() {
  let i = 0;
  let sent = 0;
  let failed = 0;
  let error = '';
  async function worker() {
    while (i < subs.length) {
      const sub = subs[i++];
      try {
        const res = await webpush.sendNotification(sub, payload, options);
        if (res.statusCode === 201) {
          sent++;
          continue;
        }
        failed++;
        error ||= `status ${res.statusCode}`;
      } catch (err) {
        failed++;
        error ||= `${err.statusCode ?? ''} ${err.message} ${err.body ?? ''}`.trim();
      }
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, worker));
  return { sent, failed, error };
}

process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === 'send') {
    process.stdout.write(JSON.stringify(await sendAll()) + '\n');
  }
}
agent.destroy();
