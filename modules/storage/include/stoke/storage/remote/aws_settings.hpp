#pragma once
/// @file
/// `AwsSettings`: the credentials, region and endpoint of S3 requests, from the places the AWS
/// tools read them: the environment, then the profile of `~/.aws/credentials` and `~/.aws/config`.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <stoke/core/error.hpp>

namespace stoke::storage {

/// Where and as whom S3 requests go. The secret key and the session token are never put in a
/// message or a log by stoke.
struct AwsSettings {
  std::string access_key_id{};       ///< AWS_ACCESS_KEY_ID / aws_access_key_id
  std::string secret_access_key{};   ///< AWS_SECRET_ACCESS_KEY / aws_secret_access_key
  std::string session_token{};       ///< AWS_SESSION_TOKEN / aws_session_token (optional)
  std::string region = "us-east-1";  ///< AWS_REGION, AWS_DEFAULT_REGION / region
  /// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL / endpoint_url; empty: AWS itself
  /// (`https://s3.<region>.amazonaws.com`, virtual-hosted buckets). A custom endpoint is
  /// addressed path-style (`<endpoint>/<bucket>/<key>`), which every S3 server understands.
  std::string endpoint{};

  /// The settings of the environment and the profile `AWS_PROFILE` (or `default`): each value
  /// from the environment when set there, else from the profile. The files are
  /// `AWS_SHARED_CREDENTIALS_FILE` (default `~/.aws/credentials`) and `AWS_CONFIG_FILE`
  /// (default `~/.aws/config`, where the section is `[profile NAME]`, or `[default]`).
  /// Throws `InputError` when no key pair is found, naming where it looked (not the values).
  static AwsSettings from_environment() {
    const std::string profile = env("AWS_PROFILE").value_or("default");
    const std::string home = env("HOME").value_or("");
    const auto credentials = ini_section(
        env("AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials"), profile);
    const auto config = ini_section(env("AWS_CONFIG_FILE").value_or(home + "/.aws/config"),
                                    profile == "default" ? profile : "profile " + profile);
    const auto pick = [&](std::initializer_list<const char*> names, const char* key,
                          std::string fallback) {
      for (const char* name : names) {
        if (auto value = env(name); value && !value->empty()) return *value;
      }
      for (const auto* section : {&credentials, &config}) {
        if (const auto it = section->find(key); it != section->end()) return it->second;
      }
      return fallback;
    };
    AwsSettings settings;
    settings.access_key_id = pick({"AWS_ACCESS_KEY_ID"}, "aws_access_key_id", "");
    settings.secret_access_key = pick({"AWS_SECRET_ACCESS_KEY"}, "aws_secret_access_key", "");
    settings.session_token = pick({"AWS_SESSION_TOKEN"}, "aws_session_token", "");
    settings.region = pick({"AWS_REGION", "AWS_DEFAULT_REGION"}, "region", settings.region);
    settings.endpoint = pick({"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}, "endpoint_url", "");
    if (settings.access_key_id.empty() || settings.secret_access_key.empty()) {
      throw InputError(
          "stoke: no AWS credentials: set AWS_ACCESS_KEY_ID and "
          "AWS_SECRET_ACCESS_KEY, or profile '" +
          profile + "' in the shared credentials file");
    }
    return settings;
  }

 private:
  static std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  /// The `key = value` lines of section `[name]` of an INI file (none when it is missing).
  static std::map<std::string, std::string> ini_section(const std::filesystem::path& file,
                                                        const std::string& name) {
    std::map<std::string, std::string> values;
    std::ifstream in(file);
    std::string line;
    bool inside = false;
    const auto trim = [](std::string text) {
      const auto begin = text.find_first_not_of(" \t\r");
      if (begin == std::string::npos) return std::string();
      return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
    };
    while (std::getline(in, line)) {
      line = trim(line);
      if (line.empty() || line.front() == '#' || line.front() == ';') continue;
      if (line.front() == '[') {
        inside = line.back() == ']' && trim(line.substr(1, line.size() - 2)) == name;
      } else if (const auto equals = line.find('='); inside && equals != std::string::npos) {
        values[trim(line.substr(0, equals))] = trim(line.substr(equals + 1));
      }
    }
    return values;
  }
};

}  // namespace stoke::storage
