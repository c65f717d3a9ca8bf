// examples/gl_interop_plasma: run it, decode the PNG it saves and compare every pixel with
// the plasma formula computed on the host. Skips where the example does (no GPU, no EGL/GL).
#include <gtest/gtest.h>

#include "gl_interop_plasma.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::uint32_t get32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b.at(at)} << 24) | (std::uint32_t{b.at(at + 1)} << 16) |
         (std::uint32_t{b.at(at + 2)} << 8) | std::uint32_t{b.at(at + 3)};
}

struct Image {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<std::uint8_t> rgba;  // top row first
};

// Decode an 8-bit RGBA PNG whose IDAT is a zlib stream of stored deflate blocks and whose
// rows use filter 0 (what plasma::encode_png writes); throws on anything else or on a bad
// CRC, so a broken writer fails the test.
Image decode_stored_png(const std::vector<std::uint8_t>& png) {
  const std::vector<std::uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (png.size() < 8 || !std::equal(signature.begin(), signature.end(), png.begin())) {
    throw std::runtime_error("no PNG signature");
  }
  Image image;
  std::vector<std::uint8_t> z;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t length = get32(png, at);
    const std::string type(png.begin() + static_cast<std::ptrdiff_t>(at + 4),
                           png.begin() + static_cast<std::ptrdiff_t>(at + 8));
    const std::size_t data = at + 8;
    if (data + length + 4 > png.size()) {
      throw std::runtime_error("truncated chunk " + type);
    }
    const std::uint32_t crc = plasma::detail::crc32(png.data() + at + 4, length + 4) ^ 0xFFFFFFFFu;
    if (crc != get32(png, data + length)) {
      throw std::runtime_error("bad CRC in chunk " + type);
    }
    if (type == "IHDR") {
      image.width = get32(png, data);
      image.height = get32(png, data + 4);
      if (png.at(data + 8) != 8 || png.at(data + 9) != 6) {
        throw std::runtime_error("not 8-bit RGBA");
      }
    } else if (type == "IDAT") {
      z.insert(z.end(), png.begin() + static_cast<std::ptrdiff_t>(data),
               png.begin() + static_cast<std::ptrdiff_t>(data + length));
    }
    at = data + length + 4;
  }
  std::vector<std::uint8_t> raw;
  std::size_t at = 2;  // after the zlib header
  for (bool last = false; !last;) {
    last = (z.at(at) & 1) != 0;
    if ((z.at(at) & 6) != 0) {
      throw std::runtime_error("a compressed deflate block (only stored ones are expected)");
    }
    const std::size_t n = z.at(at + 1) | (std::size_t{z.at(at + 2)} << 8);
    raw.insert(raw.end(), z.begin() + static_cast<std::ptrdiff_t>(at + 5),
               z.begin() + static_cast<std::ptrdiff_t>(at + 5 + n));
    at += 5 + n;
  }
  const std::size_t row = std::size_t{image.width} * 4;
  if (raw.size() != (row + 1) * image.height) {
    throw std::runtime_error("image data of " + std::to_string(raw.size()) + " bytes");
  }
  for (std::size_t y = 0; y < image.height; ++y) {
    if (raw[y * (row + 1)] != 0) {
      throw std::runtime_error("row filter other than 0");
    }
    const auto begin = raw.begin() + static_cast<std::ptrdiff_t>(y * (row + 1) + 1);
    image.rgba.insert(image.rgba.end(), begin, begin + static_cast<std::ptrdiff_t>(row));
  }
  return image;
}

TEST(PlasmaPng, TheEncoderRoundTripsThroughTheDecoder) {
  std::vector<std::uint8_t> rgba(300 * 250 * 4);  // over 65535 bytes: several stored blocks
  for (std::size_t i = 0; i < rgba.size(); ++i) {
    rgba[i] = static_cast<std::uint8_t>(i * 31 + 7);
  }
  const Image image = decode_stored_png(plasma::encode_png(rgba, 300, 250));
  EXPECT_EQ(image.width, 300u);
  EXPECT_EQ(image.height, 250u);
  EXPECT_EQ(image.rgba, rgba);
}

TEST(PlasmaPng, TheExamplesLastFrameMatchesTheFormula) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cuwrap_plasma_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path png = dir / "plasma.png";
  const std::filesystem::path log = dir / "log.txt";
  constexpr int kFrames = 7;
  const std::string command = std::string("'") + CUWRAP_PLASMA_EXAMPLE + "' --frames " +
                              std::to_string(kFrames) + " --out '" + png.string() + "' > '" +
                              log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log_in(log);
  const std::string output((std::istreambuf_iterator<char>(log_in)), {});
  if (output.find("cuwrap example skipped:") != std::string::npos) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << output;
  }
  ASSERT_EQ(status, 0) << output;
  std::ifstream in(png, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove_all(dir);
  const Image image = decode_stored_png(bytes);
  ASSERT_EQ(image.width, std::uint32_t{plasma::kWidth});
  ASSERT_EQ(image.height, std::uint32_t{plasma::kHeight});
  const float t = plasma::frame_time(kFrames - 1);
  std::size_t off = 0;
  std::size_t worst = 0;
  for (int r = 0; r < plasma::kHeight; ++r) {
    const int y = plasma::kHeight - 1 - r;  // the PNG's first row is GL's top one
    for (int x = 0; x < plasma::kWidth; ++x) {
      const auto want = plasma::pixel(x, y, plasma::kWidth, plasma::kHeight, t);
      for (std::size_t c = 0; c < 4; ++c) {
        const int got =
            image
                .rgba[(static_cast<std::size_t>(r) * plasma::kWidth + static_cast<std::size_t>(x)) *
                          4 +
                      c];
        const auto diff = static_cast<std::size_t>(std::abs(got - int{want[c]}));
        worst = std::max(worst, diff);
        off += diff > 2 ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(off, 0u) << "largest difference " << worst << "\n" << output;
  std::cout << "plasma.png: " << bytes.size() << " bytes, CRC-32 "
            << (plasma::detail::crc32(bytes.data(), bytes.size()) ^ 0xFFFFFFFFu) << '\n';
}

}  // namespace
