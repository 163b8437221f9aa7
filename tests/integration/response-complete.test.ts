import { describe } from 'vitest';
import { freePort } from '../fixtures/mcp-servers.ts';
import { backToBackRig, oneInstanceCases } from '../helpers/back-to-back-rig.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess } from '../helpers/process.ts';
import { useRestate } from '../helpers/restate.ts';

// `response_complete` means the session is free: a client that sends its next message the instant
// it arrives is never refused with run_active, whatever ended the run and wherever it ran. On two
// instances: response-complete-cluster.test.ts. Each group's tests share one server and work in
// sessions of their own.

describe('response_complete means the session is free', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  describe('on one instance', () => {
    const rig = backToBackRig(({ model, folder }) => startStepwiseProcess({ ...model, ...folder() }));
    oneInstanceCases(rig);
  });

  describe('with RUN_ENGINE=restate', () => {
    // Registered before the rig's, so Restate stops after the instance has stopped.
    const restate = useRestate();
    const rig = backToBackRig(async ({ model, folder }) =>
      startStepwiseProcess({
        ...model,
        ...folder(),
        RUN_ENGINE: 'restate',
        RESTATE_INGRESS_URL: restate().ingressUrl,
        RESTATE_ADMIN_URL: restate().adminUrl,
        RESTATE_SERVICE_PORT: String(await freePort()),
      }),
    );
    oneInstanceCases(rig);
  });
});
