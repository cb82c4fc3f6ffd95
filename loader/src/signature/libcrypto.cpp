// OpenSSL's libcrypto opened at run time (signature/libcrypto.hpp says why).
#include "signature/libcrypto.hpp"

#include <dlfcn.h>

#ifndef FATPTE_LIBCRYPTO_SONAME
#define FATPTE_LIBCRYPTO_SONAME "libcrypto.so.3"
#endif

namespace fatpte {
namespace detail {
namespace {

struct Loaded {
  LibCrypto fns{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool bind(void* lib, const char* symbol, Fn& out, std::string& why) {
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    why = std::string(FATPTE_LIBCRYPTO_SONAME) + " has no " + symbol + " (OpenSSL 3.0 or later is needed)";
    return false;
  }
  out = reinterpret_cast<Fn>(p);
  return true;
}

Loaded open_library() {
  Loaded l;
  // RTLD_LOCAL: OpenSSL's symbols stay out of the global namespace, so a process that links
  // another libcrypto of its own keeps using it. Never closed: OpenSSL registers exit handlers.
  void* lib = dlopen(FATPTE_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    l.why = std::string("cannot load ") + FATPTE_LIBCRYPTO_SONAME + " (OpenSSL's libcrypto), which verifying " +
            "signatures needs: " + (err != nullptr ? err : "dlopen failed");
    return l;
  }
  LibCrypto& f = l.fns;
  l.ok = bind(lib, "EVP_PKEY_get_id", f.pkey_get_id, l.why) && bind(lib, "EVP_PKEY_free", f.pkey_free, l.why) &&
         bind(lib, "EVP_PKEY_get_utf8_string_param", f.pkey_get_utf8_string_param, l.why) &&
         bind(lib, "EVP_sha256", f.sha256, l.why) && bind(lib, "EVP_Digest", f.digest, l.why) &&
         bind(lib, "EVP_MD_CTX_new", f.md_ctx_new, l.why) && bind(lib, "EVP_MD_CTX_free", f.md_ctx_free, l.why) &&
         bind(lib, "EVP_DigestVerifyInit", f.digest_verify_init, l.why) &&
         bind(lib, "EVP_DigestVerify", f.digest_verify, l.why) &&
         bind(lib, "EVP_PKEY_get_octet_string_param", f.pkey_get_octet_string_param, l.why) &&
         bind(lib, "d2i_PUBKEY", f.d2i_pubkey, l.why) && bind(lib, "i2d_PUBKEY", f.i2d_pubkey, l.why) && bind(lib, "CRYPTO_free", f.crypto_free, l.why) &&
         bind(lib, "EVP_DecodeBlock", f.decode_block, l.why);
  return l;
}

}  // namespace

const LibCrypto* libcrypto(std::string* why) noexcept {
  try {
    static const Loaded loaded = open_library();
    if (!loaded.ok && why != nullptr) *why = loaded.why;
    return loaded.ok ? &loaded.fns : nullptr;
  } catch (...) {  // std::bad_alloc while building a message
    if (why != nullptr) why->clear();
    return nullptr;
  }
}

const char* libcrypto_name() noexcept { return FATPTE_LIBCRYPTO_SONAME; }

}  // namespace detail
}  // namespace fatpte
