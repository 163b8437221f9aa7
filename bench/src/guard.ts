// Nothing may leave the machine: any DNS lookup or connection to a non-loopback address fails loudly.
import dns from 'node:dns';
import net from 'node:net';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

const lookup = dns.lookup;
(dns as { lookup: unknown }).lookup = (hostname: string, ...rest: unknown[]) => {
  if (!LOOPBACK.has(hostname)) throw new Error(`benchmark guard: refused a DNS lookup of ${hostname}`);
  return (lookup as (...args: unknown[]) => unknown)(hostname, ...rest);
};

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guarded(this: net.Socket, ...args: unknown[]) {
  const options = args[0] as { host?: string; path?: string } | number;
  const host = typeof options === 'object' ? options.host : (args[1] as string | undefined);
  if (typeof options === 'object' && options.path) return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  if (host && !LOOPBACK.has(host)) throw new Error(`benchmark guard: refused a connection to ${host}`);
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof connect;
