{{/*
Self-signed CA and serving certificate that survive upgrades.

The Secrets of the previous release are read back with `lookup`: the CA is reused while
certificates.selfSigned.caGeneration is unchanged (so the caBundle never churns), and the serving certificate
is reused until it enters its renewal window or the Service's DNS names change; then it is re-issued by the
same CA and the pods reload it from disk. Changing caGeneration makes a new CA and keeps the old one in the
caBundle (its key is discarded), so pods still serving the old certificate stay trusted until they reload.
Offline renders (`helm template`, lint) see no cluster and generate fresh material every time.
Returns YAML: caCert, caKey, previousCaCert, cert, key (base64 PEM), caBundle, notAfter (Unix seconds),
dnsNames, caGeneration.
*/}}
{{- define "kubegap.selfSignedTLS" -}}
{{- $cfg := .Values.certificates.selfSigned -}}
{{- $generation := toString $cfg.caGeneration -}}
{{- $dnsNames := include "kubegap.dnsNames" . | fromYamlArray -}}
{{- $dnsJoined := join "," $dnsNames -}}
{{- $now := now | unixEpoch | int64 -}}
{{- $oldCA := lookup "v1" "Secret" .Release.Namespace (include "kubegap.caSecretName" .) | default dict -}}
{{- $oldTLS := lookup "v1" "Secret" .Release.Namespace (include "kubegap.tlsSecretName" .) | default dict -}}
{{- $out := dict "caGeneration" $generation "dnsNames" $dnsJoined -}}
{{- $caData := dig "data" dict $oldCA -}}
{{- $caGenerationBefore := dig "metadata" "annotations" "kubegap.dev/ca-generation" "" $oldCA -}}
{{- $reuseCA := and (hasKey $caData "tls.crt") (hasKey $caData "tls.key") (eq $caGenerationBefore $generation) -}}
{{- $ca := dict -}}
{{- if $reuseCA -}}
{{- $ca = buildCustomCert (index $caData "tls.crt") (index $caData "tls.key") -}}
{{- $_ := set $out "caCert" (index $caData "tls.crt") -}}
{{- $_ = set $out "caKey" (index $caData "tls.key") -}}
{{- $_ = set $out "previousCaCert" (get $caData "previous.crt") -}}
{{- else -}}
{{- $ca = genCA (printf "%s-ca" (include "kubegap.fullname" .)) (int $cfg.caValidityDays) -}}
{{- $_ := set $out "caCert" ($ca.Cert | b64enc) -}}
{{- $_ = set $out "caKey" ($ca.Key | b64enc) -}}
{{- $_ = set $out "previousCaCert" (get $caData "tls.crt") -}}
{{- end -}}
{{- $tlsData := dig "data" dict $oldTLS -}}
{{- $notAfter := dig "metadata" "annotations" "kubegap.dev/not-after" "0" $oldTLS | int64 -}}
{{- $renewAt := sub $notAfter (mul (int $cfg.renewBeforeDays) 86400) -}}
{{- $sameNames := eq (dig "metadata" "annotations" "kubegap.dev/dns-names" "" $oldTLS) $dnsJoined -}}
{{- if and $reuseCA $sameNames (hasKey $tlsData "tls.crt") (hasKey $tlsData "tls.key") (lt $now $renewAt) -}}
{{- $_ := set $out "cert" (index $tlsData "tls.crt") -}}
{{- $_ = set $out "key" (index $tlsData "tls.key") -}}
{{- $_ = set $out "notAfter" (toString $notAfter) -}}
{{- else -}}
{{- $cert := genSignedCert (index $dnsNames 2) nil $dnsNames (int $cfg.certValidityDays) $ca -}}
{{- $_ := set $out "cert" ($cert.Cert | b64enc) -}}
{{- $_ = set $out "key" ($cert.Key | b64enc) -}}
{{- $_ = set $out "notAfter" (toString (add $now (mul (int $cfg.certValidityDays) 86400))) -}}
{{- end -}}
{{- $bundle := b64dec $out.caCert -}}
{{- with $out.previousCaCert -}}
{{- $bundle = printf "%s\n%s" (trimSuffix "\n" $bundle) (b64dec .) -}}
{{- end -}}
{{- $_ := set $out "caBundle" ($bundle | b64enc) -}}
{{- toYaml $out -}}
{{- end -}}
