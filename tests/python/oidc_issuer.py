"""A small OpenID Connect issuer for the tests: serves its OpenID configuration and key set over
HTTPS, and signs ID tokens with PyJWT, as an identity provider (Dex, Keycloak, Okta) would.

  oidc_issuer.py serve DIR    makes DIR/ca.pem (a CA, and a certificate for 127.0.0.1 it signs),
                              DIR/key.pem (an RSA signing key), serves on a free port and
                              writes it to DIR/port once listening; runs until killed.
  oidc_issuer.py sign DIR CLAIMS_JSON [--other-key]
                              prints a token with the claims, signed with DIR/key.pem (or a
                              key the issuer never published, under the same kid).
"""

import datetime
import http.server
import ipaddress
import json
import os
import ssl
import sys

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

KID = "test-key-1"


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def write_pem(path, key):
    with open(path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


def read_key(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def certificate(subject, key, issuer, issuer_key, ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def tls_files(dir_):
    """A CA (DIR/ca.pem, what the server is told to trust) and a serving certificate it signs."""
    ca_key, key = new_key(), new_key()
    ca = certificate("test oidc CA", ca_key, "test oidc CA", ca_key, True)
    leaf = certificate("127.0.0.1", key, "test oidc CA", ca_key, False)
    with open(os.path.join(dir_, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(dir_, "tls.pem"), "wb") as f:
        f.write(leaf.public_bytes(serialization.Encoding.PEM))
    write_pem(os.path.join(dir_, "tls-key.pem"), key)


def serve(dir_):
    tls_files(dir_)
    signing = new_key()
    write_pem(os.path.join(dir_, "key.pem"), signing)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing.public_key()))
    jwk.update({"kid": KID, "use": "sig", "alg": "RS256"})

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            issuer = f"https://127.0.0.1:{self.server.server_port}"
            if self.path == "/.well-known/openid-configuration":
                body = {
                    "issuer": issuer,
                    "jwks_uri": f"{issuer}/keys",
                    "response_types_supported": ["id_token"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                }
            elif self.path == "/keys":
                body = {"keys": [jwk]}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(dir_, "tls.pem"), os.path.join(dir_, "tls-key.pem"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(os.path.join(dir_, "port.tmp"), "w") as f:
        f.write(str(server.server_port))
    os.rename(os.path.join(dir_, "port.tmp"), os.path.join(dir_, "port"))
    server.serve_forever()


def sign(dir_, claims, other_key):
    key = new_key() if other_key else read_key(os.path.join(dir_, "key.pem"))
    print(jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID}))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sign(sys.argv[2], json.loads(sys.argv[3]), "--other-key" in sys.argv[4:])
