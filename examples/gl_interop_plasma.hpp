// The plasma effect of examples/gl_interop_plasma.cpp on the host, and the minimal PNG
// writer it saves its last frame with: shared with the test that checks the saved picture
// (tests/runtime/test_gl_interop_plasma.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace plasma {

/// Width and height of the frames.
inline constexpr int kWidth = 800;
inline constexpr int kHeight = 600;
/// Seconds between two frames of the animation.
inline constexpr float kFrameSeconds = 1.0f / 60.0f;

/// Return the animation time of frame `frame` (0-based).
inline float frame_time(int frame) { return static_cast<float>(frame) * kFrameSeconds; }

/// Return the RGBA colour the kernel writes for pixel (x, y) at time `t` (y = 0 is GL's
/// bottom row), computed on the host with the kernel's formula.
inline std::array<std::uint8_t, 4> pixel(int x, int y, int width, int height, float t) {
  const float u = static_cast<float>(x) / static_cast<float>(width);
  const float v = static_cast<float>(y) / static_cast<float>(height);
  float val = 0.0f;
  val += std::sin(u * 10.0f + t);
  val += std::sin(v * 10.0f + t * 0.7f);
  val += std::sin((u + v) * 10.0f + t * 0.5f);
  const float cx = u - 0.5f;
  const float cy = v - 0.5f;
  val += std::sin(std::sqrt(cx * cx + cy * cy) * 20.0f - t * 2.0f);
  const float cx2 = u - 0.5f + 0.3f * std::sin(t * 0.3f);
  const float cy2 = v - 0.5f + 0.3f * std::cos(t * 0.4f);
  val += std::sin(std::sqrt(cx2 * cx2 + cy2 * cy2) * 15.0f + t * 1.5f);
  val = (val + 5.0f) / 10.0f;
  const float r = std::sin(val * 6.2831853f) * 0.5f + 0.5f;
  const float g = std::sin(val * 6.2831853f + 2.094f) * 0.5f + 0.5f;
  const float b = std::sin(val * 6.2831853f + 4.189f) * 0.5f + 0.5f;
  return {static_cast<std::uint8_t>(r * 255.0f), static_cast<std::uint8_t>(g * 255.0f),
          static_cast<std::uint8_t>(b * 255.0f), 255};
}

namespace detail {

inline std::uint32_t crc32(const std::uint8_t* data, std::size_t size,
                           std::uint32_t crc = 0xFFFFFFFFu) {
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return crc;
}

inline void put32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<std::uint8_t>(value >> shift));
  }
}

inline void chunk(std::vector<std::uint8_t>& png, const char* type,
                  const std::vector<std::uint8_t>& data) {
  put32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  put32(png, crc32(png.data() + start, png.size() - start) ^ 0xFFFFFFFFu);
}

}  // namespace detail

/// Return an RGBA PNG of `rgba` (`height` rows of `width` pixels, first row on top).
///
/// The image data is deflate-stored (uncompressed blocks inside a zlib stream), which
/// every PNG reader accepts; it keeps the example free of a zlib or libpng dependency,
/// whose development headers the GPU machines lack.
inline std::vector<std::uint8_t> encode_png(const std::vector<std::uint8_t>& rgba, int width,
                                            int height) {
  const auto row = static_cast<std::size_t>(width) * 4;
  std::vector<std::uint8_t> raw;  // each row: filter type 0, then its pixels
  raw.reserve((row + 1) * static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    const auto* begin = rgba.data() + static_cast<std::size_t>(y) * row;
    raw.insert(raw.end(), begin, begin + row);
  }
  std::vector<std::uint8_t> z = {0x78, 0x01};  // zlib: deflate, 32K window, no dictionary
  for (std::size_t at = 0; at < raw.size() || at == 0;) {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + n == raw.size();
    z.push_back(last ? 1 : 0);  // BFINAL, BTYPE 00 (stored)
    z.push_back(static_cast<std::uint8_t>(n & 0xFF));
    z.push_back(static_cast<std::uint8_t>(n >> 8));
    z.push_back(static_cast<std::uint8_t>(~n & 0xFF));
    z.push_back(static_cast<std::uint8_t>((~n >> 8) & 0xFF));
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
             raw.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    if (last) {
      break;
    }
  }
  std::uint32_t a = 1;
  std::uint32_t b = 0;
  for (const std::uint8_t byte : raw) {  // Adler-32 of the uncompressed data
    a = (a + byte) % 65521u;
    b = (b + a) % 65521u;
  }
  detail::put32(z, (b << 16) | a);

  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<std::uint8_t> header;
  detail::put32(header, static_cast<std::uint32_t>(width));
  detail::put32(header, static_cast<std::uint32_t>(height));
  header.insert(header.end(), {8, 6, 0, 0, 0});  // 8 bits, RGBA, deflate, filter 0, no interlace
  detail::chunk(png, "IHDR", header);
  detail::chunk(png, "IDAT", z);
  detail::chunk(png, "IEND", {});
  return png;
}

/// Write `bytes` to `path`; false when it cannot be written.
inline bool write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace plasma
