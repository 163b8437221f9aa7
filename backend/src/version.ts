/** The Stepwise release this build is (package.json's version): MCP's server info, the trace resource's service.version. */
export const STEPWISE_VERSION = '0.1.0';
