import { describe, expect, it } from 'vitest';
import { ANONYMOUS, normalizeArn, principalOf } from '../../../lib/http/principal.js';

const ctx = (authorizer?: unknown) => ({ requestContext: { authorizer } as never });

describe('principalOf', () => {
  it('maps an assumed-role session to its role, and keeps users and roles as they are', () => {
    expect(normalizeArn('arn:aws:sts::123456789012:assumed-role/Writers/alice-session')).toBe('arn:aws:iam::123456789012:role/Writers');
    expect(normalizeArn('arn:aws-cn:sts::123456789012:assumed-role/R/s')).toBe('arn:aws-cn:iam::123456789012:role/R');
    expect(normalizeArn('arn:aws:iam::123456789012:user/bob')).toBe('arn:aws:iam::123456789012:user/bob');
    expect(principalOf(ctx({ iam: { userArn: 'arn:aws:sts::123456789012:assumed-role/Writers/s1' } }))).toBe('User:arn:aws:iam::123456789012:role/Writers');
  });

  it('takes the configured claim of a JWT, the local token check\'s principal, or else ANONYMOUS', () => {
    expect(principalOf(ctx({ jwt: { claims: { sub: 'u-1', email: 'a@b.c' } } }))).toBe('User:u-1');
    expect(principalOf(ctx({ jwt: { claims: { sub: 'u-1', email: 'a@b.c' } } }), 'email')).toBe('User:a@b.c');
    expect(principalOf(ctx({ jwt: { claims: { sub: '' } } }))).toBe(ANONYMOUS);
    expect(principalOf(ctx({ lambda: { principal: 'User:admin' } }))).toBe('User:admin');
    expect(principalOf(ctx())).toBe(ANONYMOUS);
  });
});
