"""Verifies a JWT against a published JSON Web Key Set with PyJWT, as a relying party of the
ServiceAccount issuer would (workload identity federation).

Usage: verify_token.py JWKS_FILE TOKEN ISSUER AUDIENCE
Prints the verified claims as JSON; on a refusal prints {"refused": "<why>"} and exits 1.
"""

import json
import sys

import jwt


def main():
    jwks_file, token, issuer, audience = sys.argv[1:5]
    with open(jwks_file, encoding="utf-8") as f:
        key_set = jwt.PyJWKSet.from_dict(json.load(f))
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        keys = [k for k in key_set.keys if k.key_id == kid]
        if not keys:
            raise jwt.InvalidTokenError(f"no published key has kid {kid!r}")
        claims = jwt.decode(
            token,
            keys[0].key,
            algorithms=[keys[0].algorithm_name],
            issuer=issuer,
            audience=audience,
        )
    except jwt.InvalidTokenError as e:
        print(json.dumps({"refused": str(e)}))
        sys.exit(1)
    print(json.dumps(claims))


main()
