// docs/spec.md and docs/skus.md hold the tables the code prints, verbatim,
// so the documentation cannot drift from what the parser accepts.
#include "compiler/spec/DeploySpec.h"
#include "compiler/spec/Sku.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace volt::spec {
namespace {

std::string readDoc(const std::string &relative) {
  std::ifstream in(std::filesystem::path(VOLT_SOURCE_DIR) / relative);
  EXPECT_TRUE(in.good()) << relative << " is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Docs, SpecReferenceMentionsEveryKey) {
  std::string doc = readDoc("docs/spec.md");
  for (const std::string &key : deploySpecKeys())
    EXPECT_NE(doc.find("`" + key + "`"), std::string::npos)
        << "docs/spec.md does not mention " << key;
}

TEST(Docs, SpecReferenceTableIsCurrent) {
  std::string doc = readDoc("docs/spec.md");
  std::string table = deploySpecReference();
  EXPECT_NE(doc.find(table), std::string::npos)
      << "docs/spec.md must contain this table verbatim:\n"
      << table;
}

TEST(Docs, SkuReferenceAndTableAreCurrent) {
  std::string doc = readDoc("docs/skus.md");
  std::string keys = skuReference();
  EXPECT_NE(doc.find(keys), std::string::npos) << "docs/skus.md must contain this table verbatim:\n"
                                               << keys;
  std::string table = builtinSkuTable();
  EXPECT_NE(doc.find(table), std::string::npos) << "docs/skus.md must contain this text verbatim:\n"
                                                << table;
}

} // namespace
} // namespace volt::spec
