/**
 * Every error code Stepwise sends, in one place: the backend throws and replies with these, the
 * web app reads them. `refusesChat`: the code can answer a `chat` message (or a resume) that
 * therefore started nothing (the web app is no longer busy). `status`: the HTTP status where REST uses the code.
 */
export const ERROR_CODES = {
  // A client's message was refused; nothing changed.
  invalid_json: { refusesChat: true, summary: 'The frame is not JSON' },
  invalid_message: { refusesChat: true, summary: 'A field is missing or invalid' },
  unknown_type: { refusesChat: true, summary: 'No message has this type' },
  binary_not_supported: { summary: 'Messages are JSON text frames' },
  frame_too_large: { summary: 'The frame is over the size limit' },
  run_active: { refusesChat: true, status: 409, summary: 'A response is still in progress' },
  no_active_run: { summary: 'Nothing is running' },
  no_pending_input: { summary: 'The agent is not waiting for an answer' },
  not_resumable: { refusesChat: true, summary: 'That run cannot be continued' },
  unknown_snapshot: { refusesChat: true, summary: 'No snapshot or restore point has this id' },
  too_many_snapshots: { summary: 'The chat holds as many snapshots as one chat may keep' },
  ambiguous_input: { summary: 'Several questions wait: the answer must name one' },
  invalid_arguments: { summary: 'An approval’s edited arguments do not fit the tool’s schema; the approval still waits' },
  invalid_answer: { summary: 'The answer is not one of the question’s choices; the question still waits' },
  unknown_tool: { refusesChat: true, summary: 'A named tool does not exist' },
  unknown_strategy: { refusesChat: true, summary: 'No strategy has this name' },
  rate_limited: { refusesChat: true, summary: 'Too many messages a second (or REST calls, or bytes of event logs read, a minute)' },
  server_busy: { refusesChat: true, summary: 'The server runs as many runs as it may' },
  too_many_runs: { refusesChat: true, summary: 'This client runs as many runs as one client may' },
  session_deleted: { refusesChat: true, summary: 'The chat was deleted' },
  queue_full: { refusesChat: true, summary: 'As many messages wait for the run as may (STEER_QUEUE_MAX); the run goes on' },
  message_too_long: { refusesChat: true, summary: 'A message sent during a run is over STEER_MAX_CHARS; the run goes on' },
  unknown_message: { summary: 'No waiting message has this id (it was applied, cancelled, or never sent)' },
  unknown_node: { summary: 'The run has no branch with this id that can be stopped or resumed now' },
  read_only: { refusesChat: true, summary: 'An admin watching another person’s chat may only stop its run' },
  // A response failed or was cut short.
  timeout: { summary: 'The answer took too long and was stopped' },
  model_error: { summary: 'The model endpoint failed' },
  model_timeout: { summary: 'The model endpoint took too long' },
  input_timeout: { summary: 'Nobody answered in time' },
  internal_error: { status: 500, summary: 'Something failed inside the server' },
  engine_unavailable: { summary: 'The run engine (Restate) could not be reached' },
  // Tools (sent to the model as tool errors, and in logs).
  invalid_tool_arguments: { summary: 'A tool call’s arguments do not fit its schema' },
  tool_failed: { summary: 'A tool ran and failed' },
  // REST and upgrades.
  unauthorized: { status: 401, summary: 'A valid token is required' },
  forbidden_origin: { status: 403, summary: 'This origin may not use the server' },
  forbidden_host: { status: 421, summary: 'The server does not answer to this host name' },
  too_many_connections: { status: 429, summary: 'Too many connections, sockets or uploads from one client (address, or user when signed in)' },
  not_found: { status: 404, summary: 'No such thing' },
  invalid_id: { status: 400, summary: 'An id is malformed' },
  invalid_query: { status: 400, summary: 'A query parameter is invalid' },
  bad_request: { status: 400, summary: 'The request is malformed' },
  invalid_file_name: { status: 400, summary: 'The file name is not allowed' },
  file_not_found: { status: 404, summary: 'No such file' },
  file_too_large: { status: 413, summary: 'The file is over the size limit' },
  too_many_files: { status: 400, summary: 'The chat holds as many files as it may' },
  not_text: { status: 400, summary: 'The file is not text' },
  invalid_file_content: { status: 400, summary: 'The file breaks the rules of its kind (the message says where)' },
  invalid_pdf: { status: 400, summary: 'The PDF is malformed and cannot be read' },
  encrypted_pdf: { status: 400, summary: 'The PDF is encrypted (password-protected); save it without a password and attach it again' },
  too_many_pages: { status: 400, summary: 'The PDF has more pages than PDF_MAX_PAGES' },
  invalid_image: { status: 400, summary: 'The image is malformed, not of the kind its name says, or over IMAGE_MAX_PIXELS' },
  vision_unsupported: { summary: 'Images were attached but the model the call goes to cannot see them (LLM_VISION, or `vision` in the config file’s models)' },
  too_many_images: { refusesChat: true, summary: 'A message names more images than IMAGE_MAX_PER_MESSAGE' },
  sign_in_refused: { status: 400, summary: 'The sign-in provider’s answer failed a check (its signature, a claim); the message says which' },
  admin_only: { status: 403, summary: 'Only an admin may do this' },
  already_owned: { status: 409, summary: 'The chat already has an owner' },
  invalid_settings: { status: 400, summary: 'A settings change failed its checks (every problem is listed in `issues`); nothing changed' },
  push_service_refused: { status: 400, summary: 'A push subscription’s endpoint is not at a known push service (PUSH_SERVICE_HOSTS)' },
  setting_locked: { status: 409, summary: 'A setting is pinned by an environment variable or the config file; the app cannot change it' },
  // Startup.
  config_error: { summary: 'A setting is missing or invalid' },
  prompt_error: { summary: 'A prompt template is missing or broken' },
} as const satisfies Record<string, { summary: string; refusesChat?: boolean; status?: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** True when `code` answers a chat message that started nothing. */
export function refusesChat(code: string): boolean {
  const entry = (ERROR_CODES as Record<string, { refusesChat?: boolean }>)[code];
  return entry?.refusesChat === true;
}
