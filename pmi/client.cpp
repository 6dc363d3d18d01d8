// Backend selection and the naming rule for shared-memory objects.
#include <string>

#include "pmi/backends.hpp"
#include "pmi/pmi.hpp"

namespace iris::pmi {

std::unique_ptr<client> client_open() {
  if (auto pmi1 = pmi1_client_open()) return pmi1;
  if (auto pmix = pmix_client_open()) return pmix;
  return singleton_client_open();
}

std::string shm_name_prefix(std::string_view job_id) {
  std::string prefix = "iris-";
  prefix.reserve(prefix.size() + job_id.size() + 1);
  for (char c : job_id) {
    // Spelled out instead of std::isalnum: the result must not depend on the
    // locale, since mpiexec and every rank must compute the same prefix.
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    prefix += keep ? c : '_';
  }
  prefix += '-';
  return prefix;
}

namespace {

// PMI-1 sends `key=value` words separated by spaces and lines: a card that
// holds any of these characters could not travel over it.
bool fits_pmi1_wire(std::string_view text, bool is_key) {
  for (char c : text) {
    if (c == '\0' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return false;
    if (is_key && c == '=') return false;
  }
  return true;
}

}  // namespace

void check_card(std::string_view key, std::string_view value) {
  if (key.empty() || key.size() > max_key_length || !fits_pmi1_wire(key, true)) {
    throw error("business-card key '" + std::string(key) + "' must have 1 to " +
                std::to_string(max_key_length) + " characters and no spaces, '=' or NUL");
  }
  if (value.size() > max_value_length || !fits_pmi1_wire(value, false)) {
    throw error("business card '" + std::string(key) + "' has " + std::to_string(value.size()) +
                " characters; it must have at most " + std::to_string(max_value_length) +
                " and no spaces or NUL");
  }
}

}  // namespace iris::pmi
