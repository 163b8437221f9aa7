/** Why a slot could not be had: the server is full, or this client (or user) has its share already. */
export type SlotRefusal = 'server_busy' | 'client_busy' | 'user_busy';

/**
 * How many answers and runs the server works on at once, and how many of them one client (an
 * address, or a user when users sign in) may hold, so that one client cannot take every slot from
 * everyone else.
 */
export class RunSlots {
  private used = 0;
  private readonly perClient = new Map<string, number>();
  private readonly perUser = new Map<string, number>();

  constructor(
    readonly limit: number,
    /** MAX_RUNS_PER_ADDRESS: one client's share. */
    readonly clientLimit: number = limit,
    /** MAX_RUNS_PER_USER: how many one user may hold (undefined: no limit of its own). */
    readonly userLimit: number | undefined = undefined,
  ) {}

  /** How many runs `user` holds here. */
  heldBy(user: string): number {
    return this.perUser.get(user) ?? 0;
  }

  get inUse(): number {
    return this.used;
  }

  /** Takes a slot for `client`; returns its release function, or why none was free. */
  tryAcquire(client: string | undefined, user?: string): (() => void) | SlotRefusal {
    if (this.used >= this.limit) return 'server_busy';
    if (user !== undefined && this.userLimit !== undefined && this.heldBy(user) >= this.userLimit) return 'user_busy';
    const held = client === undefined ? 0 : (this.perClient.get(client) ?? 0);
    if (client !== undefined && held >= this.clientLimit) return 'client_busy';
    this.used++;
    if (client !== undefined) this.perClient.set(client, held + 1);
    if (user !== undefined) this.perUser.set(user, this.heldBy(user) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
      if (client !== undefined) countDown(this.perClient, client);
      if (user !== undefined) countDown(this.perUser, user);
    };
  }
}

function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
