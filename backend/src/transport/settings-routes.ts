import { SettingsView } from '@stepwise/shared-types';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isSettingsAdmin } from '../auth/user.ts';
import type { Config } from '../config/config.ts';
import { SettingsPatch } from '../settings/settings-document.ts';
import { type SettingsIssue, SettingsIssues, SettingsLocked } from '../settings/settings-layers.ts';
import type { SettingsService } from '../settings/settings-service.ts';
import { errorResponses } from './openapi.ts';
import { sendError } from './rest-routes.ts';

/**
 * `GET` and `PATCH /api/settings`: the settings an admin changes in the app. A change is checked
 * against the config file's own schemas (400 `invalid_settings` with every issue), refused for a
 * setting the environment or the config file pins (409 `setting_locked`), and for anyone but an
 * admin (403 `admin_only`). Secrets are write-only: no response holds one.
 */
export async function registerSettingsRoutes(server: FastifyInstance, settings: SettingsService, config: Config): Promise<void> {
  await server.register(async (plugin) => {
    const app = plugin.withTypeProvider<ZodTypeProvider>();
    // A body that fails its schema gets every issue, each with its path, not only the first.
    app.setErrorHandler((error, request, reply) => {
      if (hasZodFastifySchemaValidationErrors(error as FastifyError)) {
        const issues = (error as FastifyError & { validation: Array<{ instancePath?: string; message?: string }> }).validation.map((issue) => ({
          path: (issue.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.') || 'body',
          message: issue.message ?? 'invalid',
        }));
        return refuse(reply, 400, 'invalid_settings', issues);
      }
      if (error instanceof SettingsLocked) return refuse(reply, 409, 'setting_locked', error.issues);
      if (error instanceof SettingsIssues) return refuse(reply, 400, 'invalid_settings', error.issues);
      const status = (error as { statusCode?: number }).statusCode ?? 500;
      if (status >= 500) request.log.error({ err: error }, 'settings request failed');
      return sendError(reply, status, status >= 500 ? 'internal_error' : 'bad_request', status >= 500 ? 'Internal error' : (error as Error).message);
    });
    // Only an admin reads or changes the settings (before the body is checked: others learn nothing of it).
    app.addHook('preValidation', async (request, reply) => {
      if (!isSettingsAdmin(request.user, config.auth.mode)) {
        return sendError(reply, 403, 'admin_only', 'Only an admin may see or change the settings');
      }
    });
    app.get(
      '/api/settings',
      {
        schema: {
          tags: ['settings'],
          summary:
            'The settings an admin may change in the app, in force here, each with its source (locked when the environment or the config file sets it), and the latest changes; secrets only as set or not',
          response: { 200: SettingsView, ...errorResponses(401, 403) },
        },
      },
      () => settings.view(),
    );
    app.patch(
      '/api/settings',
      {
        schema: {
          tags: ['settings'],
          summary: 'Changes settings: stored, recorded (who, when, what) and applied on every instance without a restart',
          body: SettingsPatch,
          response: { 200: SettingsView, ...errorResponses(400, 401, 403, 409) },
        },
      },
      (request) => {
        const user = request.user!;
        const name = config.auth.mode === 'token' ? 'The token holder' : config.auth.mode === 'none' ? 'Local user' : user.name;
        return settings.change(request.body, { id: user.id, name });
      },
    );
  });
}

function refuse(reply: FastifyReply, status: number, code: 'invalid_settings' | 'setting_locked', issues: SettingsIssue[]) {
  const message =
    code === 'setting_locked'
      ? `Pinned outside the app, so not changed: ${issues.map((issue) => `${issue.path} ${issue.message}`).join('; ')}`
      : `The settings were not changed: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`;
  return reply.code(status).type('application/json').send({ error: { code, message, issues } });
}
