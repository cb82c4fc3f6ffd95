// OpenSSL's libcrypto, opened with dlopen the first time a signature is verified.
//
// libfatpte links no libcrypto: a process that never verifies a signature (every fatpte-run
// without --require-signature, every ExecuTorch program loaded through the fat delegate) neither
// maps OpenSSL's 4.5 MB nor pays for its relocations and initializers at start-up. The headers are
// used at build time only, for the types and the function signatures below; the soname is the one
// CMake found at build time (FATPTE_LIBCRYPTO_SONAME, OpenSSL 3.0 or later).
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <string>

namespace fatpte {
namespace detail {

// The OpenSSL functions signature/keys.cpp calls, bound by name.
struct LibCrypto {
  decltype(&::EVP_PKEY_get_id) pkey_get_id;
  decltype(&::EVP_PKEY_free) pkey_free;
  decltype(&::EVP_PKEY_get_utf8_string_param) pkey_get_utf8_string_param;
  decltype(&::EVP_sha256) sha256;
  decltype(&::EVP_Digest) digest;
  decltype(&::EVP_MD_CTX_new) md_ctx_new;
  decltype(&::EVP_MD_CTX_free) md_ctx_free;
  decltype(&::EVP_DigestVerifyInit) digest_verify_init;
  decltype(&::EVP_DigestVerify) digest_verify;
  decltype(&::EVP_PKEY_get_octet_string_param) pkey_get_octet_string_param;
  decltype(&::d2i_PUBKEY) d2i_pubkey;
  decltype(&::i2d_PUBKEY) i2d_pubkey;
  decltype(&::CRYPTO_free) crypto_free;
  decltype(&::EVP_DecodeBlock) decode_block;
};

// The bound functions, opening the library on the first call (thread-safe, once per process);
// nullptr when it cannot be opened or lacks a function, with the reason in *why.
const LibCrypto* libcrypto(std::string* why) noexcept;

// The soname opened (for messages and tests).
const char* libcrypto_name() noexcept;

}  // namespace detail
}  // namespace fatpte
