/** Why a client may not start more work now: its budget is spent, or it has as much going as it may. */
export type BudgetRefusal = { kind: 'spent'; retryAfterMs: number } | { kind: 'busy' };

interface Budget {
  /** What is left to spend (below zero: owed, after a piece of work that cost more than was left). */
  left: number;
  at: number;
  inFlight: number;
}

/**
 * A budget per client of some costly work (bytes of event log read, say): `perMinute` a minute,
 * refilled evenly, at most a minute's worth saved up, and at most `inFlight` pieces at once. A
 * piece's cost is known only once it is done, so it is charged then, and may leave the budget in
 * debt: the client's next pieces wait until it has paid it back. Budgets that are full again are
 * forgotten, so the map holds only the clients that spent lately.
 */
export class WorkBudgets {
  private readonly budgets = new Map<string, Budget>();

  constructor(
    private readonly perMinute: number,
    private readonly inFlight: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Starts a piece of work for `client`: returns the function that charges what it cost (call it
   * once, also when the work failed, with what was spent), or why it may not start.
   */
  begin(client: string): ((cost: number) => void) | BudgetRefusal {
    const budget = this.current(client);
    if (budget.left <= 0) return { kind: 'spent', retryAfterMs: Math.ceil(((1 - budget.left) / this.perMinute) * 60_000) };
    if (budget.inFlight >= this.inFlight) return { kind: 'busy' };
    budget.inFlight++;
    this.budgets.set(client, budget);
    let charged = false;
    return (cost) => {
      if (charged) return;
      charged = true;
      const after = this.current(client);
      after.inFlight--;
      after.left -= cost;
      this.budgets.set(client, after);
    };
  }

  /** The client's budget as of now (refilled for the time since it was last seen). */
  private current(client: string): Budget {
    const now = this.now();
    if (this.budgets.size > 1000) this.forgetFull(now);
    const budget = this.budgets.get(client) ?? { left: this.perMinute, at: now, inFlight: 0 };
    budget.left = Math.min(this.perMinute, budget.left + ((now - budget.at) / 60_000) * this.perMinute);
    budget.at = now;
    return budget;
  }

  private forgetFull(now: number): void {
    for (const [client, budget] of this.budgets) {
      if (budget.inFlight === 0 && budget.left + ((now - budget.at) / 60_000) * this.perMinute >= this.perMinute) this.budgets.delete(client);
    }
  }
}
