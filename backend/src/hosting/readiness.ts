/**
 * Whether this process should be sent new work. It stops being ready at shutdown (SIGTERM) while
 * it still serves: a load balancer or Kubernetes sees the readiness probe fail and sends new
 * requests elsewhere, while the runs here are handed over (or stopped) and the process is alive.
 */
export class Readiness {
  private isDraining = false;

  /** True from the moment shutdown began. */
  get draining(): boolean {
    return this.isDraining;
  }

  /** Marks the process as going away; readiness fails from now on. */
  drain(): void {
    this.isDraining = true;
  }
}
