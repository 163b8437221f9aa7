/** Why a slot could not be had: the server is full, or this address has its share already. */
export type SlotRefusal = 'server_busy' | 'address_busy';

/**
 * How many answers and runs the server works on at once, and how many of them one client
 * address may hold, so that one client cannot take every slot from everyone else.
 */
export class RunSlots {
  private used = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly addressLimit: number = limit,
  ) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes a slot for `address`; returns its release function, or why none was free. */
  tryAcquire(address: string | undefined): (() => void) | SlotRefusal {
    if (this.used >= this.limit) return 'server_busy';
    const held = address === undefined ? 0 : (this.perAddress.get(address) ?? 0);
    if (address !== undefined && held >= this.addressLimit) return 'address_busy';
    this.used++;
    if (address !== undefined) this.perAddress.set(address, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
      if (address === undefined) return;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    };
  }
}
