# Shared by the benchmark scripts that call webhooks (sourced, never run): makes a CA and a
# certificate for 127.0.0.1 signed by it in $work (a self-signed certificate is a CA, which TLS
# refuses as a server's) and starts the test webhook server (tests/python/webhook.py) with them.
#
# Needs $work; sets $webhook_port and $ca_bundle (the CA, base64, for a clientConfig).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
    -keyout "$work/webhook.key" -out "$work/webhook.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$work/webhook.ext"
openssl x509 -req -in "$work/webhook.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/webhook.ext" -out "$work/webhook.crt" 2>/dev/null
python3 tests/python/webhook.py "$work/webhook.crt" "$work/webhook.key" >"$work/webhook.out" &
for _ in $(seq 100); do grep -q ready "$work/webhook.out" 2>/dev/null && break; sleep 0.1; done
webhook_port=$(awk '/ready/ {print $2}' "$work/webhook.out")
ca_bundle=$(base64 -w0 <"$work/ca.crt")
