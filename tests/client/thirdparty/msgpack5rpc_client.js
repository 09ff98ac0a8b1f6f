// A third-party msgpack-RPC client talking to ptod: msgpack5rpc (the RPC
// layer Neovim's node client was built on), over a plain net.Socket on the
// daemon's Unix socket.  Nothing here knows ptod's framing: if ptod spoke
// anything but standard msgpack-RPC, these calls would not come back.
//
// Usage: node msgpack5rpc_client.js SOCKET
// Prints one line per check and exits 0 when all pass.
'use strict';

const net = require('net');
const assert = require('assert');
const Session = require('msgpack5rpc');

const socketPath = process.argv[2];
if (!socketPath) {
  console.error('usage: node msgpack5rpc_client.js SOCKET');
  process.exit(2);
}

function f32(values) {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeFloatLE(v, 4 * i));
  return b;
}

const sock = net.connect({ path: socketPath });
const session = new Session();

function call(method, params) {
  return new Promise((resolve, reject) => {
    session.request(method, params, (err, result) => {
      if (err) reject(Object.assign(new Error(err.message), { wire: err }));
      else resolve(result);
    });
  });
}

async function main() {
  await new Promise((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  session.attach(sock, sock);

  const ping = await call('ping', []);
  assert.strictEqual(ping.state, 'ready');
  assert.strictEqual(ping.device, 0);
  console.log(`ping: ptod ${ping.version} on device ${ping.device} is ${ping.state}`);

  const status = await call('status', []);
  assert.strictEqual(status.platform, 'sim');
  assert.deepStrictEqual(status.arena.sizing.ring_heap, [1048576, 1048576, 1048576, 1048576]);
  console.log(`status: queue capacity ${status.queue.capacity}, arena key ${status.arena.key}`);

  const a = [1, 2, 3, 4], b = [10, 20, 30, 40];
  const res = await call('dispatch', [{
    program: 'vector_add',
    args: [{ data: f32(a) }, { data: f32(b) }, { out: 16 }],
    config: { ring_heap: [2048, 0, 0, 0] },
  }]);
  assert.strictEqual(res.outputs[0], null);
  const out = res.outputs[2];
  assert.ok(Buffer.isBuffer(out), 'the output is a msgpack bin');
  const sum = [0, 1, 2, 3].map((i) => out.readFloatLE(4 * i));
  assert.deepStrictEqual(sum, [11, 22, 33, 44]);
  assert.deepStrictEqual(res.sizing.ring_heap, [2048, 1048576, 1048576, 1048576]);
  assert.deepStrictEqual(res.sizing.source.ring_heap, ['request', 'config', 'config', 'config']);
  console.log(`dispatch: vector_add = ${sum.join(' ')}, ring_heap[0] = ${res.sizing.ring_heap[0]} (${res.sizing.source.ring_heap[0]})`);

  // An error comes back as the standard msgpack-RPC error element.
  try {
    await call('dispatch', [{ program: 'vector_add', args: [], config: { ring_heapp: 2048 } }]);
    assert.fail('an unknown config key was accepted');
  } catch (e) {
    assert.ok(e.wire, e);
    assert.strictEqual(e.wire.name, 'INVALID_REQUEST');
    assert.strictEqual(e.wire.key, 'ring_heapp');
    console.log(`error: ${e.wire.name} (${e.wire.code}): ${e.wire.message}`);
  }
  sock.end();
}

main().then(() => process.exit(0), (e) => {
  console.error(`FAILED: ${e.stack || e}`);
  process.exit(1);
});
