import { z } from 'zod';
import { emailField, personName, text } from '../http/common-schemas.ts';
import { PERMISSIONS, ROLES } from './model.ts';
import { PASSWORD_MAX, PASSWORD_MIN, passwordPolicyProblem } from './passwords.ts';

/** Request schemas of the identity service: validation and the OpenAPI document in one place. */

const credential = (max: number) => z.string().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

/** Every spelling SPEC §3.1 accepts: camelCase, RFC 6749 snake_case, form `username`. */
export const SessionRequest = z
  .strictObject({
    grantType: z.string().max(64).optional(),
    grant_type: z.string().max(64).optional(),
    email: credential(320).optional(),
    username: credential(320).optional(),
    password: credential(4096).optional(),
    clientId: credential(128).optional(),
    client_id: credential(128).optional(),
    clientSecret: credential(512).optional(),
    client_secret: credential(512).optional(),
    refreshToken: credential(512).optional(),
    refresh_token: credential(512).optional(),
    scope: z.string().max(1024).optional().meta({ description: 'Accepted for OAuth clients; not used.' }),
  })
  .meta({ description: 'grantType password (email, password), clientCredentials (clientId, clientSecret) or refreshToken (refreshToken); snake_case and form fields work too.' });

export const AuthAliasRequest = z.strictObject({
  username: credential(320),
  password: credential(4096),
  grant_type: z.literal('password').optional(),
  scope: z.string().max(1024).optional(),
});

const role = z.enum(ROLES, { error: (issue) => (issue.input === undefined ? 'is required' : `must be one of ${ROLES.join(', ')}`) });
// the policy in the schema, so its answer comes with the request's other errors, not after them
const newPassword = z
  .string()
  .max(1024)
  .superRefine((p, ctx) => {
    const problem = passwordPolicyProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  // the document states the policy's bounds; the schema lets up to 1024 through to the policy, whose message says why
  .meta({ description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters, not one of the most common passwords`, minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX });

export const NewOrg = z
  .strictObject({
    name: text(256),
    adminEmail: emailField.optional(),
    adminName: text(256).optional(),
    adminPassword: newPassword.optional(),
  })
  // an admin's name or password without the admin's e-mail describe nobody: refused, not dropped
  // (an org tester's password vanished without a word, and the creator became the admin)
  .superRefine((o, ctx) => {
    for (const k of ['adminName', 'adminPassword'] as const) {
      if (o[k] !== undefined && o.adminEmail === undefined) ctx.addIssue({ code: 'custom', path: [k], message: 'is for the admin named by adminEmail; give adminEmail too, or leave it out' });
    }
  });

/** A PATCH must change something: `{}` is a 422 naming what it may give, not a 200 that records a change that never happened. */
const givesOneOf = (...keys: string[]) => [(p: Record<string, unknown>) => keys.some((k) => p[k] !== undefined), `give at least one of ${keys.join(', ')}`] as const;

export const OrgPatch = z.strictObject({ name: text(256) });

export const NewMember = z.strictObject({
  email: emailField,
  role,
  name: text(256).optional(),
  password: newPassword.optional(),
});

export const MemberPatch = z.strictObject({ role });

export const MePatch = z.strictObject({
  name: personName.optional(),
  password: newPassword.optional(),
  currentPassword: z.string().max(4096).optional(),
}).refine(...givesOneOf('name', 'password'));

export const NewUser = z.strictObject({
  email: emailField,
  name: personName.optional(),
  password: newPassword,
  superuser: z.boolean().optional(),
});

export const UserPatch = z.strictObject({
  name: personName.optional(),
  superuser: z.boolean().optional(),
  disabled: z.boolean().optional(),
  password: newPassword.optional(),
}).refine(...givesOneOf('name', 'superuser', 'disabled', 'password'));

export const NewOrgServiceAccount = z.strictObject({ name: text(256), role });

export const NewInstallationServiceAccount = z.strictObject({
  name: text(256),
  permissions: z.array(z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(', ')}` })).min(1, 'must name at least one permission'),
});
